"""Drive ``subagent-host serve`` as a real subprocess: through the official MCP client, or raw over its pipes.

Configs are TOML files in ``tmp_path`` whose entries run the fake ACP agent. ``RawServer`` writes wire lines and
reads every line back, for what the client cannot show (responses it drops, lines it never sends).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final, cast

import anyio
import psutil
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.cli._helpers import acp_entry, cli_env, write_config
from tests.conftest import FAKE_ACP_AGENT, PYTHON

__all__ = [
    "SERVE_TIMEOUT_S",
    "RawServer",
    "acp_entry",
    "client_session",
    "fake_agents",
    "most_fake_agents",
    "serve_args",
    "serve_params",
    "until_fake_agents",
    "write_config",
]

SERVE_TIMEOUT_S: Final = 45
"""A cold interpreter importing the SDK, plus fake children, on a loaded 2-core box."""
_MAX_LINE: Final = 64 * 1024 * 1024


def serve_args(config: Path, *extra: str) -> list[str]:
    return ["-m", "host", "serve", "--config", str(config), *extra]


def serve_params(config: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=PYTHON, args=serve_args(config, *extra), env=cli_env(), cwd=config.parent)


@asynccontextmanager
async def client_session(config: Path, *extra: str, **session_options: Any) -> AsyncGenerator[ClientSession]:
    """An initialized official ``ClientSession`` on a fresh ``serve`` subprocess."""
    async with stdio_client(serve_params(config, *extra)) as (read, write):
        async with ClientSession(read, write, **session_options) as session:
            await session.initialize()
            yield session


def fake_agents(root_pid: int) -> list[psutil.Process]:
    """The live fake ACP agents among ``root_pid``'s descendants."""
    found: list[psutil.Process] = []
    try:
        children = psutil.Process(root_pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return found
    for proc in children:
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and str(FAKE_ACP_AGENT) in proc.cmdline():
                found.append(proc)
        except psutil.Error:
            continue
    return found


async def until_fake_agents(root_pid: int, count: int, poll_s: float = 0.05) -> None:
    """Poll the OS until exactly ``count`` fake agents live under ``root_pid`` (callers bound this)."""
    while True:
        if len(fake_agents(root_pid)) == count:
            return
        await anyio.sleep(poll_s)


async def most_fake_agents(root_pid: int, seconds: float, poll_s: float = 0.05) -> int:
    """The largest number of live fake agents under ``root_pid`` seen while sampling for ``seconds``."""
    most = 0
    with anyio.move_on_after(seconds):
        while True:
            most = max(most, len(fake_agents(root_pid)))
            await anyio.sleep(poll_s)
    return most


class RawServer:
    """A ``serve`` subprocess driven line by line."""

    def __init__(self, process: Process) -> None:
        self.process = process
        assert process.stdout is not None
        self._stdout = BufferedByteReceiveStream(process.stdout)
        self.lines: list[dict[str, Any]] = []

    @classmethod
    @asynccontextmanager
    async def open(cls, config: Path, *extra: str) -> AsyncGenerator[RawServer]:
        process = await anyio.open_process(
            [PYTHON, *serve_args(config, *extra)], env=cli_env(), cwd=config.parent, stderr=subprocess.DEVNULL
        )
        try:
            yield cls(process)
        finally:
            with anyio.CancelScope(shield=True):
                if process.returncode is None:
                    process.kill()
                await process.wait()
                await process.aclose()

    async def send_bytes(self, data: bytes) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(data)

    async def send(self, message: Mapping[str, Any]) -> None:
        await self.send_bytes(json.dumps(message).encode() + b"\n")

    async def request(self, request_id: int | str, method: str, params: Mapping[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = dict(params)
        await self.send(message)

    async def read(self) -> dict[str, Any]:
        line = await self._stdout.receive_until(b"\n", _MAX_LINE)
        message = cast("dict[str, Any]", json.loads(line))
        self.lines.append(message)
        return message

    async def response_to(self, request_id: int | str) -> dict[str, Any]:
        """Read lines until the response to ``request_id``."""
        while True:
            message = await self.read()
            if message.get("id") == request_id and "method" not in message:
                return message

    async def initialize(self, version: str = "2025-11-25") -> dict[str, Any]:
        await self.request(
            "init",
            "initialize",
            {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
        )
        response = await self.response_to("init")
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return response

    def responses_for(self, request_id: int | str) -> list[dict[str, Any]]:
        return [line for line in self.lines if line.get("id") == request_id and "method" not in line]

    async def close_stdin(self) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.aclose()


def config_with(tmp_path: Path, entries: Mapping[str, Mapping[str, Any]]) -> Path:
    return write_config(tmp_path, entries)


def ids(values: Sequence[dict[str, Any]]) -> list[object]:
    return [value.get("id") for value in values]
