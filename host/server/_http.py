"""Streamable HTTP for ``serve``: the ``/mcp`` endpoint under Starlette and uvicorn, loopback by default.

Imported only with ``--http``. uvicorn's own signal capture is disabled (``serve`` owns SIGTERM/SIGINT/SIGHUP and
would otherwise have them re-raised at exit). With a token, every HTTP request must carry
``Authorization: Bearer <token>`` (compared in constant time); any other gets 401 before it reaches the endpoint.
Bound to a loopback address, the endpoint refuses DNS rebinding as the MCP SDK's server does: a ``Host`` header that
is not a loopback name gets 421, an ``Origin`` that is not a loopback origin gets 403. A ``POST`` must be
``application/json`` (else 400). Each refusal's body is a JSON-RPC error with ``id: null`` (``_http_ladder``).
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import socket
import sys
from collections.abc import Generator
from typing import Final

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from host.mcp import McpServer
from host.server._http_ladder import refusal
from host.server._http_mcp import McpEndpoint
from host.server._options import ServeOptions, is_loopback
from host.server._stopper import Stopper

__all__ = ["MCP_PATH", "serve_http"]

logger = logging.getLogger(__name__)

MCP_PATH: Final = "/mcp"
_GRACEFUL_SHUTDOWN_S: Final = 1
_UNAUTHORIZED_BODY: Final = b"unauthorized\n"
_LOOPBACK_HOSTS: Final = ("127.0.0.1", "localhost", "[::1]")


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


class _RequestChecks:
    """``POST`` must be JSON; on a loopback bind, ``Host`` and ``Origin`` must name loopback (DNS rebinding)."""

    def __init__(self, app: ASGIApp, *, loopback: bool) -> None:
        self._app = app
        self._loopback = loopback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {name.lower(): value.decode("latin-1") for name, value in scope["headers"]}
            refused: tuple[int, str] | None = None
            if scope["method"] == "POST" and not headers.get(b"content-type", "").lower().startswith(
                "application/json"
            ):
                refused = (400, "Invalid Content-Type header")
            elif self._loopback and not _loopback_name(headers.get(b"host", ""), ""):
                refused = (421, "Invalid Host header")
            elif self._loopback and headers.get(b"origin") and not _loopback_name(headers[b"origin"], "http://"):
                refused = (403, "Invalid Origin header")
            if refused is not None:
                await refusal(*refused)(scope, receive, send)
                return
        await self._app(scope, receive, send)


def _loopback_name(value: str, scheme: str) -> bool:
    return any(value == f"{scheme}{host}" or value.startswith(f"{scheme}{host}:") for host in _LOOPBACK_HOSTS)


class _Uvicorn(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None]:
        # serve owns the signals; uvicorn would re-raise a captured one when it exits.
        yield


async def serve_http(server: McpServer, options: ServeOptions, stopper: Stopper) -> None:
    """Serve ``server`` at ``http://HOST:PORT/mcp`` until the stopper fires; print the bound URL on stderr."""
    assert options.http is not None
    host, port = options.http
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.create_server((host, port), family=family)
    try:
        async with anyio.create_task_group() as calls:
            endpoint = McpEndpoint(server, calls)
            routes = [Route(MCP_PATH, endpoint)]  # an ASGI app: every HTTP method reaches it
            app: ASGIApp = _RequestChecks(Starlette(routes=routes), loopback=is_loopback(host))
            if options.auth_token is not None:
                app = _BearerAuth(app, options.auth_token)
            config = uvicorn.Config(
                app, log_level="warning", lifespan="off", timeout_graceful_shutdown=_GRACEFUL_SHUTDOWN_S
            )
            web = _Uvicorn(config)

            def stop() -> None:
                endpoint.close()
                web.should_exit = True

            stopper.on_stop(stop)
            bound_port = listener.getsockname()[1]
            shown = f"[{host}]" if family == socket.AF_INET6 else host
            sys.stderr.write(f"subagent-host: serving MCP at http://{shown}:{bound_port}{MCP_PATH}\n")
            sys.stderr.flush()
            await web.serve(sockets=[listener])
            # uvicorn returned: nothing can reach a call any more; each settles, cancelled, before the host closes.
            stopper.stop()
    finally:
        listener.close()
