"""Drive a real MCP parent from npm through ``subagent-host serve``, with its model API faked on loopback.

The parents are installed by ``scripts/test-setup.sh`` into the project-local, gitignored npm prefix ``.tools/npm``;
a missing one fails the test with a message naming that script (never a skip). Every parent runs offline: a private
HOME, a dummy key, telemetry and update checks off, every proxy variable at a closed loopback port and
``NO_PROXY=127.0.0.1,localhost``, so the only traffic is to the fake model API and to ``serve`` over stdio.
``LoopbackApi`` serves a fake model API (``_model_api_fakes.py``) from a thread and keeps every request body.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import threading
from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final, cast

import anyio

from tests.conftest import MARKER_NAME, REPO_ROOT

__all__ = [
    "CLAUDE",
    "CODEX",
    "GEMINI",
    "SETUP_SCRIPT",
    "LoopbackApi",
    "Reply",
    "closed_loopback_port",
    "installed_parent",
    "objects",
    "offline_env",
    "parent_output",
    "run_parent",
]

SETUP_SCRIPT: Final = "scripts/test-setup.sh"
NPM_PREFIX: Final = REPO_ROOT / ".tools" / "npm"
# The npm launcher of Codex CLI (a small node script that runs the native binary shipped in its platform package).
CODEX: Final = NPM_PREFIX / "node_modules" / ".bin" / "codex"
# Claude Code's native binary, which its npm package installs as its launcher.
CLAUDE: Final = NPM_PREFIX / "node_modules" / ".bin" / "claude"
# Gemini CLI's launcher (a bundled node script).
GEMINI: Final = NPM_PREFIX / "node_modules" / ".bin" / "gemini"

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


def objects(value: object) -> list[dict[str, Any]]:
    """The JSON objects in ``value`` if it is a list (anything else in it is skipped)."""
    if not isinstance(value, list):
        return []
    return [cast(dict[str, Any], item) for item in cast(list[object], value) if isinstance(item, dict)]


Reply = tuple[int, str, bytes]
"""An HTTP answer: status, content type, body."""


class LoopbackApi:
    """A JSON-over-HTTP API on an ephemeral loopback port, answered by ``respond(path, body)`` from a thread."""

    def __init__(self, respond: Callable[[str, dict[str, Any]], Reply]) -> None:
        self._respond = respond
        self._lock = threading.Lock()
        self._requests: list[tuple[str, dict[str, Any]]] = []
        self.origin = ""

    def requests(self, path_part: str) -> list[dict[str, Any]]:
        """The bodies of the POSTs received so far whose path contains ``path_part``, in order."""
        with self._lock:
            return [body for path, body in self._requests if path_part in path]

    def _answer(self, path: str, raw: bytes) -> Reply:
        try:
            body: object = json.loads(raw) if raw else {}
        except ValueError:
            return 400, "text/plain", b""
        request = cast(dict[str, Any], body) if isinstance(body, dict) else {}
        with self._lock:
            self._requests.append((path, request))
        return self._respond(path, request)

    @contextmanager
    def serving(self) -> Generator[LoopbackApi]:
        """Serve (``origin`` is ``http://127.0.0.1:<port>``) until the context exits."""
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._send(*api._answer(self.path, raw))

            def do_GET(self) -> None:
                self._send(404, "text/plain", b"")

            def _send(self, status: int, content_type: str, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        self.origin = f"http://127.0.0.1:{server.server_address[1]}"
        try:
            yield self
        finally:
            server.shutdown()
            server.server_close()
            thread.join(_SERVER_STOP_TIMEOUT_S)
