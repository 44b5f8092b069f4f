"""Drive ``subagent-host serve --http 127.0.0.1:0`` (the installed console script) with raw HTTP from ``http.client``.

``HttpServer`` starts the server with its stderr in a file (the bound URL is read from there) and sends exact
requests: any headers, duplicates included, and any body. ``Reply`` is the status, the headers and the whole body.
"""

from __future__ import annotations

import http.client
import json
import re
import signal
import subprocess
import time
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

import psutil

from tests.cli._helpers import CONSOLE_SCRIPT, cli_env

__all__ = [
    "JSON_AND_SSE",
    "TOKEN",
    "HttpServer",
    "Reply",
    "modern_headers",
    "modern_params",
    "sse_messages",
    "wait_for",
]

TOKEN: Final = "test-token-0123456789"
JSON_AND_SSE: Final = "application/json, text/event-stream"
START_TIMEOUT_S: Final = 30
_URL = re.compile(r"serving MCP at http://127\.0\.0\.1:(\d+)/mcp")


@dataclass(frozen=True)
class Reply:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def json(self) -> dict[str, Any]:
        assert self.headers.get("content-type") == "application/json", self.headers.get("content-type")
        return cast("dict[str, Any]", json.loads(self.body))


def wait_for(condition: Any, timeout: float, what: str) -> None:
    """Poll ``condition()`` every 10 ms until it is true; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def sse_messages(body: bytes) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an SSE body (its ``data:`` lines)."""
    return [json.loads(line[5:]) for line in body.decode().splitlines() if line.startswith("data:")]


def modern_params(extra: Mapping[str, Any] | None = None, version: str = "2026-07-28") -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
    }
    return {**(extra or {}), "_meta": meta}


def modern_headers(method: str, name: str | None = None, version: str = "2026-07-28") -> list[tuple[str, str]]:
    headers = [("MCP-Protocol-Version", version), ("Mcp-Method", method)]
    if name is not None:
        headers.append(("Mcp-Name", name))
    return headers


class HttpServer:
    """A ``serve --http`` subprocess and raw exchanges with it."""

    def __init__(self, process: subprocess.Popen[bytes], port: int, token: str | None) -> None:
        self.process = process
        self.port = port
        self.token = token

    @classmethod
    @contextmanager
    def open(
        cls,
        config: Path,
        *extra: str,
        token: str | None = TOKEN,
        env: Mapping[str, str] | None = None,
        command: Sequence[str] = (CONSOLE_SCRIPT,),
    ) -> Generator[HttpServer]:
        """Start the server; on exit SIGTERM it, require exit 0 and that nothing it started survives."""
        args = [*command, "serve", "--config", str(config), "--http", "127.0.0.1:0", *extra]
        if token is not None:
            token_file = config.parent / "token"
            token_file.write_text(token + "\n", encoding="utf-8")
            token_file.chmod(0o600)
            args += ["--auth-token-file", str(token_file)]
        log = config.parent / "serve.stderr"
        with log.open("wb") as stderr:
            process = subprocess.Popen(
                args,
                env=dict(env) if env is not None else cli_env(),
                cwd=config.parent,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
            )
        try:
            port: list[int] = []

            def bound() -> bool:
                match = _URL.search(log.read_text(encoding="utf-8", errors="replace"))
                if match is not None:
                    port.append(int(match.group(1)))
                return bool(port) or process.poll() is not None

            wait_for(bound, START_TIMEOUT_S, "serve to print its URL")
            assert port, log.read_text(encoding="utf-8", errors="replace")
            server = cls(process, port[0], token)
            yield server
            server.stop_cleanly()
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(10)

    def descendants(self) -> list[psutil.Process]:
        try:
            return psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def stop_cleanly(self) -> None:
        """SIGTERM: exit 0 within the shutdown bound, and no descendant left."""
        descendants = self.descendants()
        self.process.send_signal(signal.SIGTERM)
        assert self.process.wait(15) == 0
        for proc in descendants:
            wait_for(lambda proc=proc: not _alive(proc), 5, f"pid {proc.pid} to end")

    def connect(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)

    def send(
        self,
        connection: http.client.HTTPConnection,
        method: str,
        body: bytes | None = None,
        headers: Sequence[tuple[str, str]] = (),
        *,
        host: str | None = None,
        content_type: str | None = "application/json",
        accept: str | None = JSON_AND_SSE,
        authorization: str | None = "",
    ) -> http.client.HTTPResponse:
        """Send one request with exactly these headers (``authorization=""``: the server's own token)."""
        connection.putrequest(method, "/mcp", skip_host=True, skip_accept_encoding=True)
        connection.putheader("Host", host if host is not None else f"127.0.0.1:{self.port}")
        if authorization == "" and self.token is not None:
            authorization = f"Bearer {self.token}"
        for name, value in (("Authorization", authorization), ("Content-Type", content_type), ("Accept", accept)):
            if value:
                connection.putheader(name, value)
        for name, value in headers:
            connection.putheader(name, value)
        if body is not None:
            connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        return connection.getresponse()

    def exchange(self, method: str, body: bytes | None = None, **options: Any) -> Reply:
        """One request on a fresh connection, read to its end."""
        connection = self.connect()
        try:
            response = self.send(connection, method, body, **options)
            return Reply(response.status, response.headers, response.read())
        finally:
            connection.close()

    def post(self, message: Any, **options: Any) -> Reply:
        return self.exchange("POST", json.dumps(message).encode(), **options)

    def initialize(self) -> str:
        """A handshake-era session, initialized; its id."""
        params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
        reply = self.post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
        assert reply.status == 200, reply
        session_id = reply.headers["mcp-session-id"]
        notified = self.post(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=[("Mcp-Session-Id", session_id)]
        )
        assert (notified.status, notified.body) == (202, b"")
        return session_id


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
