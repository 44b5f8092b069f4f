"""Drive a real MCP parent from npm through ``subagent-host serve``, with its model API faked on loopback.

The parents are installed by ``scripts/test-setup.sh`` into the project-local, gitignored npm prefix ``.tools/npm``;
a missing one fails the test with a message naming that script (never a skip). Every parent runs offline: a private
HOME, a dummy key, telemetry and update checks off, every proxy variable at a closed loopback port and
``NO_PROXY=127.0.0.1,localhost``, so the only traffic is to the fake model API and to ``serve`` over stdio.

``ScriptedResponsesApi`` fakes the OpenAI Responses API (``POST /v1/responses``, streaming SSE) as Codex CLI uses
it: a request without a tool output gets one scripted ``function_call``; a request carrying the tool's output ends
the turn with a short assistant message. It keeps every request body, so a test reads exactly what the parent sent
its model.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import threading
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final, cast

import anyio

from tests.conftest import MARKER_NAME, REPO_ROOT

__all__ = [
    "CODEX",
    "SETUP_SCRIPT",
    "ScriptedResponsesApi",
    "closed_loopback_port",
    "installed_parent",
    "offline_env",
    "run_parent",
]

SETUP_SCRIPT: Final = "scripts/test-setup.sh"
NPM_PREFIX: Final = REPO_ROOT / ".tools" / "npm"
# The npm launcher of Codex CLI (a small node script that runs the native binary shipped in its platform package).
CODEX: Final = NPM_PREFIX / "node_modules" / ".bin" / "codex"

# How long the fake model API waits for its serving thread to stop.
_SERVER_STOP_TIMEOUT_S: Final = 5.0
# How long a killed parent's process group may take to be reaped.
_KILL_REAP_TIMEOUT_S: Final = 5.0


def installed_parent(launcher: Path) -> Path:
    """``launcher`` if the setup script installed it; otherwise fail naming that script."""
    if not launcher.is_file():
        raise AssertionError(
            f"{launcher} is missing: run `bash {SETUP_SCRIPT}` (it installs the MCP parents these tests drive "
            f"into {NPM_PREFIX.relative_to(REPO_ROOT)})"
        )
    return launcher


@contextmanager
def closed_loopback_port() -> Generator[int]:
    """A loopback port that refuses connections for as long as the context lasts (bound, never listening)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def offline_env(home: Path, closed_port: int, extra: Mapping[str, str]) -> dict[str, str]:
    """A parent's whole environment: private HOME, proxies at ``closed_port``, telemetry off, plus ``extra``."""
    node = shutil.which("node")
    path_dirs = [str(Path(node).parent)] if node else []
    path_dirs += ["/usr/local/bin", "/usr/bin", "/bin"]
    proxy = f"http://127.0.0.1:{closed_port}"
    env = {
        "PATH": os.pathsep.join(path_dirs),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "DO_NOT_TRACK": "1",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
        # The suite's leak check finds the parent (and whatever it starts with this variable) by its marker.
        MARKER_NAME: os.environ[MARKER_NAME],
    }
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        env[name] = proxy
        env[name.lower()] = proxy
    env.update(extra)
    return env


async def run_parent(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout_s: float) -> int:
    """Run a parent to its exit within ``timeout_s``; stdout and stderr go to ``parent.stdout``/``.stderr`` in ``cwd``.

    The parent leads a session of its own, so a timeout kills its whole process group (the npm launcher and the
    native binary it runs); an MCP server the parent started in a group of its own then sees stdin EOF and exits.
    """
    with (cwd / "parent.stdout").open("wb") as stdout, (cwd / "parent.stderr").open("wb") as stderr:
        process = await anyio.open_process(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            start_new_session=True,
        )
        try:
            with anyio.fail_after(timeout_s):
                return await process.wait()
        finally:
            if process.returncode is None:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                with anyio.move_on_after(_KILL_REAP_TIMEOUT_S, shield=True):
                    await process.wait()


def parent_output(cwd: Path) -> str:
    """What the parent printed (stdout, then stderr), for a failure message."""
    parts = [(cwd / name).read_text(errors="replace") for name in ("parent.stdout", "parent.stderr")]
    return "\n--- stderr ---\n".join(parts)


def _objects(value: object) -> list[dict[str, Any]]:
    """The JSON objects in ``value`` if it is a list (anything else in it is skipped)."""
    if not isinstance(value, list):
        return []
    return [cast(dict[str, Any], item) for item in cast(list[object], value) if isinstance(item, dict)]


def _sse(events: Sequence[Mapping[str, Any]]) -> bytes:
    return b"".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode() for event in events)


def _completed(response_id: str) -> dict[str, Any]:
    usage = {
        "input_tokens": 0,
        "input_tokens_details": None,
        "output_tokens": 0,
        "output_tokens_details": None,
        "total_tokens": 0,
    }
    return {"type": "response.completed", "response": {"id": response_id, "usage": usage}}


class ScriptedResponsesApi:
    """A loopback fake of the Responses API that scripts one call of ``namespace``/``name`` with ``arguments``."""

    CALL_ID: Final = "call_subagent_1"
    FINAL_TEXT: Final = "done"

    def __init__(self, *, namespace: str, name: str, arguments: Mapping[str, Any]) -> None:
        self._call = {
            "type": "function_call",
            "id": "fc_1",
            "call_id": self.CALL_ID,
            "namespace": namespace,
            "name": name,
            "arguments": json.dumps(arguments),
        }
        self._lock = threading.Lock()
        self._requests: list[dict[str, Any]] = []
        self.base_url = ""

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every ``/responses`` request body received so far, in order."""
        with self._lock:
            return list(self._requests)

    def offered_tools(self, namespace: str) -> list[str]:
        """The tool names the parent's first request offered its model inside ``namespace``."""
        requests = self.requests
        if not requests:
            return []
        names: list[str] = []
        for tool in _objects(requests[0].get("tools")):
            if tool.get("type") == "namespace" and tool.get("name") == namespace:
                names.extend(str(member.get("name")) for member in _objects(tool.get("tools")))
        return names

    def function_call_output(self) -> str | None:
        """The text of the ``function_call_output`` the parent sent back for the scripted call, if it did."""
        for body in self.requests:
            for item in _objects(body.get("input")):
                if item.get("type") == "function_call_output" and item.get("call_id") == self.CALL_ID:
                    return _output_text(item.get("output"))
        return None

    def _respond(self, body: dict[str, Any]) -> bytes:
        with self._lock:
            self._requests.append(body)
            turn = len(self._requests)
        answered = any(item.get("type") == "function_call_output" for item in _objects(body.get("input")))
        response_id = f"resp_{turn}"
        if answered:
            message = {
                "type": "message",
                "role": "assistant",
                "id": f"msg_{turn}",
                "content": [{"type": "output_text", "text": self.FINAL_TEXT}],
            }
            item = message
        else:
            item = self._call
        created = {"type": "response.created", "response": {"id": response_id}}
        return _sse([created, {"type": "response.output_item.done", "item": item}, _completed(response_id)])

    @contextmanager
    def serving(self) -> Generator[ScriptedResponsesApi]:
        """Serve on an ephemeral loopback port (``base_url`` ends in ``/v1``) until the context exits."""
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/responses"):
                    self._send(404, b"", "text/plain")
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._send(400, b"", "text/plain")
                    return
                scripted = api._respond(cast(dict[str, Any], body) if isinstance(body, dict) else {})
                self._send(200, scripted, "text/event-stream")

            def do_GET(self) -> None:
                self._send(404, b"", "text/plain")

            def _send(self, status: int, payload: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        self.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()
            thread.join(_SERVER_STOP_TIMEOUT_S)


def _output_text(output: object) -> str:
    """A ``function_call_output``'s text: a string as is, a list of content items joined by newlines."""
    if isinstance(output, str):
        return output
    parts = _objects(output)
    return "\n".join(str(part.get("text", "")) for part in parts) if parts else json.dumps(output)
