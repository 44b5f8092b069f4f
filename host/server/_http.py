"""Streamable HTTP for ``serve``: the same server object, under uvicorn, loopback by default, optional bearer token.

uvicorn's own signal capture is disabled (``serve`` owns SIGTERM/SIGINT/SIGHUP and would otherwise have them
re-raised at exit). With a token, every HTTP request must carry ``Authorization: Bearer <token>``; any other gets
401 before it reaches the MCP app.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import socket
import sys
from collections.abc import Generator
from typing import TYPE_CHECKING, Any, Final

import uvicorn
from mcp.server.lowlevel import Server
from starlette.types import ASGIApp, Receive, Scope, Send

from host.server._options import ServeOptions

if TYPE_CHECKING:
    from host.server._app import Stopper

__all__ = ["MCP_PATH", "serve_http"]

logger = logging.getLogger(__name__)

MCP_PATH: Final = "/mcp"
_GRACEFUL_SHUTDOWN_S: Final = 1
_UNAUTHORIZED_BODY: Final = b"unauthorized\n"


class _BearerAuth:
    """Answers 401 to an HTTP request without the exact bearer token; passes everything else through."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self._app = app
        self._expected = b"Bearer " + token.encode("utf-8")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            presented = b""
            for name, value in scope["headers"]:
                if name.lower() == b"authorization":
                    presented = value
            if not hmac.compare_digest(presented, self._expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")],
                    }
                )
                await send({"type": "http.response.body", "body": _UNAUTHORIZED_BODY})
                return
        await self._app(scope, receive, send)


class _Uvicorn(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None]:
        # serve owns the signals; uvicorn would re-raise a captured one when it exits.
        yield


async def serve_http(server: Server[Any], options: ServeOptions, stopper: Stopper) -> None:
    """Serve ``server`` at ``http://HOST:PORT/mcp`` until the stopper fires; print the bound URL on stderr."""
    assert options.http is not None
    host, port = options.http
    app: ASGIApp = server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    if options.auth_token is not None:
        app = _BearerAuth(app, options.auth_token)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.create_server((host, port), family=family)
    try:
        bound_port = listener.getsockname()[1]
        config = uvicorn.Config(
            app,
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=_GRACEFUL_SHUTDOWN_S,
        )
        web = _Uvicorn(config)

        def stop() -> None:
            web.should_exit = True

        stopper.on_stop(stop)
        shown = f"[{host}]" if family == socket.AF_INET6 else host
        sys.stderr.write(f"subagent-host: serving MCP at http://{shown}:{bound_port}{MCP_PATH}\n")
        sys.stderr.flush()
        await web.serve(sockets=[listener])
    finally:
        listener.close()
