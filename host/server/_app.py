"""``subagent-host serve``: the host's registry as an MCP server (``host.mcp``), and its lifetime.

The protocol layer is built once and served over stdio (the project's own JSON-RPC peer on fd 0/fd 1) or Streamable
HTTP. Stdin EOF, SIGTERM, SIGINT and SIGHUP stop it: every in-flight call is cancelled (its watcher cancels the
call's signal; it settles, disposes its run and is answered nothing); closing the host then kills and disposes every
background job and leftover run, and the orphan sweep ends anything a child orphaned. Runs use their entry's graces
until shutdown begins; from then on a ``GraceCap`` bound around the whole server caps every teardown so that the
ladder fits the official client's shutdown budget (2 s after closing stdin, then SIGTERM, then SIGKILL 2 s later). A
signal received once shutdown has begun ends every EOF rung at once (each tree gets its SIGTERM now); the SIGTERM →
SIGKILL rung still runs.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable
from typing import Any, Final

import anyio

from host._host import Host
from host.config import HostConfig
from host.mcp import McpServer, Notices
from host.process import GraceCap, bind_grace_cap, reap_orphans
from host.server._options import ServeOptions
from host.server._stdio import serve_stdio
from host.server._stopper import Stopper

__all__ = ["SERVE_EOF_GRACE_MS", "SERVE_TERM_GRACE_MS", "EarlySignal", "serve"]

logger = logging.getLogger(__name__)

SERVE_EOF_GRACE_MS: Final = 500.0
"""The cap on every entry's ``dispose_eof_grace_ms`` once ``serve`` is shutting down."""
SERVE_TERM_GRACE_MS: Final = 1000.0
"""The cap on every entry's ``dispose_grace_ms`` (SIGTERM → SIGKILL) once ``serve`` is shutting down."""
_SIGNALS: Final = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

EarlySignal = Callable[[], signal.Signals | None]
"""The first signal the console entry recorded before serving started (``None``: none)."""


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
        async with Host.open(
            config,
            parent_cwd=os.getcwd(),
            state_dir=options.state_dir,
            max_concurrent_runs=options.max_concurrent_runs,
        ) as host:
            notices = Notices()
            remove_listener = host.on_job_done(notices.on_job_done)
            server = McpServer(host, notices)
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
                    await serve_stdio(server, stopper.on_stop, stopper.stop)
                group.cancel_scope.cancel()
            remove_listener()
        # Still under the signal receiver, so a later signal cannot cut the sweep short.
        await reap_orphans(SERVE_TERM_GRACE_MS)
    return True


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
