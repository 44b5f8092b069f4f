"""``subagent-host serve``: the host's registry as an MCP server (the SDK's low-level ``Server``), and its lifetime.

The server object is built once and served over our own stdio transport or Streamable HTTP. Stdin EOF, SIGTERM,
SIGINT and SIGHUP stop it: the SDK cancels every in-flight handler, whose watcher cancels its call's signal; each
call settles and disposes its run; closing the host then kills and disposes every background job and leftover run,
and the orphan sweep ends anything a child orphaned. Runs use their entry's graces until shutdown begins; from then
on a ``GraceCap`` bound around the whole server caps every teardown so that the ladder fits the official client's
shutdown budget (2 s after closing stdin, then SIGTERM, then SIGKILL 2 s later). A signal received once shutdown
has begun ends every EOF rung at once (each tree gets its SIGTERM now); the SIGTERM → SIGKILL rung still runs.
"""

from __future__ import annotations

import logging
import os
import signal
import warnings
from collections.abc import Callable
from typing import Any, Final

import anyio
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from pydantic import ValidationError

from host._host import Host
from host._version import package_version
from host.config import HostConfig, delegation_tool_name
from host.process import GraceCap, bind_grace_cap, reap_orphans
from host.server._calls import CallHandler
from host.server._notices import Notices
from host.server._options import EarlySignal, ServeOptions
from host.server._tools import mcp_tools
from host.server._transport import stdio_transport

__all__ = ["SERVE_EOF_GRACE_MS", "SERVE_TERM_GRACE_MS", "SERVER_NAME", "serve"]

logger = logging.getLogger(__name__)

SERVER_NAME: Final = "subagent-host"
SERVE_EOF_GRACE_MS: Final = 500.0
"""The cap on every entry's ``dispose_eof_grace_ms`` once ``serve`` is shutting down."""
SERVE_TERM_GRACE_MS: Final = 1000.0
"""The cap on every entry's ``dispose_grace_ms`` (SIGTERM → SIGKILL) once ``serve`` is shutting down."""
_SIGNALS: Final = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_INTERNAL_ERROR: Final = "Internal error"


class _ExceptionBoundary:
    """Outermost middleware: an unexpected exception is answered ``-32603`` with no exception text."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        try:
            return await call_next(ctx)
        except (MCPError, ValidationError):
            raise
        except Exception:
            logger.exception("subagent-host serve: handling %s failed", ctx.method)
            raise MCPError(code=types.INTERNAL_ERROR, message=_INTERNAL_ERROR) from None


def build_server(host: Host, limiter: anyio.CapacityLimiter, notices: Notices) -> Server[Any]:
    """The MCP server over ``host``'s registry."""
    delegation_tools = {delegation_tool_name(name): name for name in host.config.providers}
    call_tool = CallHandler(host, delegation_tools, limiter, notices)

    async def list_tools(
        _ctx: ServerRequestContext[Any], _params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=mcp_tools(host.tools(), delegation_tools))

    async def set_logging_level(
        ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        notices.set_level(ctx, params.level)
        return types.EmptyResult()

    with warnings.catch_warnings():
        # Logging is deprecated at 2026-07-28; handshake-era clients still use it.
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        server: Server[Any] = Server(  # pyright: ignore[reportDeprecated]
            SERVER_NAME,
            version=package_version(),
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_set_logging_level=set_logging_level,
        )
    server.middleware = [_ExceptionBoundary()]
    return server


async def serve(options: ServeOptions, config: HostConfig, early_signal: EarlySignal | None = None) -> bool:
    """Serve until stdin EOF (stdio) or a signal; return once every run and job was disposed.

    Returns ``False`` without serving when ``early_signal`` reports a signal the console entry recorded before
    this receiver took over; ``True`` otherwise.
    """
    # Bound around everything: a run is disposed in whichever task ends it (a call, a job, the host's close).
    cap = GraceCap(eof_ms=SERVE_EOF_GRACE_MS, term_ms=SERVE_TERM_GRACE_MS)
    with anyio.open_signal_receiver(*_SIGNALS) as signals, bind_grace_cap(cap):
        if early_signal is not None and early_signal() is not None:
            return False
        async with Host.open(config, parent_cwd=os.getcwd(), state_dir=options.state_dir) as host:
            notices = Notices()
            remove_listener = host.on_job_done(notices.on_job_done)
            server = build_server(host, anyio.CapacityLimiter(options.max_concurrent_runs), notices)
            async with anyio.create_task_group() as group:
                group.start_soon(notices.run)
                stopper = Stopper()
                # First, so every teardown that shutdown causes is capped.
                stopper.on_stop(cap.engage)
                # Jobs go down alongside the in-flight calls, not after them: both ladders fit one budget.
                stopper.on_stop(host.cancel_jobs)
                group.start_soon(_watch_signals, signals, stopper, cap)
                if options.http is not None:
                    from host.server._http import serve_http

                    await serve_http(server, options, stopper)
                else:
                    await _serve_stdio(server, stopper)
                group.cancel_scope.cancel()
            remove_listener()
        # Still under the signal receiver, so a later signal cannot cut the sweep short.
        await reap_orphans(SERVE_TERM_GRACE_MS)
    return True


class Stopper:
    """How a signal stops the transport: cancel the stdio serve scope, or ask the HTTP server to exit."""

    def __init__(self) -> None:
        self.stopping = False
        self._stops: list[Callable[[], None]] = []

    def on_stop(self, stop: Callable[[], None]) -> None:
        self._stops.append(stop)
        if self.stopping:
            stop()

    def stop(self) -> None:
        if self.stopping:
            return
        self.stopping = True
        for stop in self._stops:
            stop()


async def _watch_signals(signals: Any, stopper: Stopper, cap: GraceCap) -> None:
    async for received in signals:
        name = signal.Signals(received).name
        if not stopper.stopping:
            logger.info("subagent-host serve: %s received; shutting down", name)
            stopper.stop()
        else:
            # Shutdown has begun (a signal or stdin EOF): hurry, but never skip the SIGTERM → SIGKILL rung.
            logger.info("subagent-host serve: %s received while shutting down; ending every EOF wait", name)
            cap.cut_eof()


async def _serve_stdio(server: Server[Any], stopper: Stopper) -> None:
    async with stdio_transport(on_eof=stopper.stop) as (read_stream, write_stream):
        with anyio.CancelScope() as scope:
            stopper.on_stop(scope.cancel)
            await server.run(read_stream, write_stream, server.create_initialization_options())
