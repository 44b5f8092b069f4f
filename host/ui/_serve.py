"""``subagent-host ui``: validate the options, then serve the dashboard under uvicorn until a signal.

A non-loopback address requires ``--auth-token-file`` (a private file, like ``serve``'s); a loopback one answers
only to its own Host names (DNS rebinding). SIGINT, SIGTERM and SIGHUP end it cleanly: uvicorn's own signal
capture is off, the command's receiver asks the server to exit, and open event streams are closed within
``_GRACEFUL_SHUTDOWN_S``.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
import sys
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from host._token_file import is_loopback, read_token_file

__all__ = ["DEFAULT_UI_ADDRESS", "UiOptions", "UiUsageError", "parse_ui_options", "run_ui"]

DEFAULT_UI_ADDRESS: Final = "127.0.0.1:8766"
_GRACEFUL_SHUTDOWN_S: Final = 1
_SIGNALS: Final = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_EXIT_BY_SIGNAL: Final = {signal.SIGHUP: 129, signal.SIGINT: 130, signal.SIGTERM: 143}


class UiUsageError(Exception):
    """A bad ``ui`` argument: exit 2 with a one-line message."""


@dataclass(frozen=True, slots=True)
class UiOptions:
    """The validated ``ui`` arguments."""

    state_dir: Path
    host: str
    port: int
    token: str | None
    open_browser: bool


def parse_ui_options(
    *, state_dir: str | None, address: str | None, token_file: str | None, open_browser: bool
) -> UiOptions:
    """Validate the ``ui`` arguments.

    Raises:
        UiUsageError: a bad address, an unreadable or non-private token file, or a non-loopback address without one.
    """
    from host.records import resolve_state_dir

    host, port = _parse_address(address or DEFAULT_UI_ADDRESS)
    token = _read_token(token_file) if token_file is not None else None
    if token is None and not is_loopback(host):
        raise UiUsageError(f"subagent-host: binding {host} (not loopback) requires --auth-token-file")
    return UiOptions(resolve_state_dir(state_dir), host, port, token, open_browser)


def run_ui(options: UiOptions, early_signal: Callable[[], signal.Signals | None]) -> int:
    """Serve until a signal; 0 after a clean stop, 128 + N when signal N came before serving started."""
    logging.basicConfig(level=logging.WARNING, format="subagent-host: %(levelname)s %(name)s: %(message)s")
    import anyio

    served = anyio.run(_serve, options, early_signal)
    if not served:
        received = early_signal()
        assert received is not None
        sys.stderr.write(f"subagent-host: interrupted by {received.name} before serving started\n")
        return _EXIT_BY_SIGNAL[received]
    return 0


async def _serve(options: UiOptions, early_signal: Callable[[], signal.Signals | None]) -> bool:
    import anyio
    import uvicorn

    from host.ui._app import create_app

    class _Uvicorn(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Generator[None]:
            yield  # the command owns the signals

    with anyio.open_signal_receiver(*_SIGNALS) as signals:
        if early_signal() is not None:
            return False
        family = socket.AF_INET6 if ":" in options.host else socket.AF_INET
        listener = socket.create_server((options.host, options.port), family=family)
        try:
            port = listener.getsockname()[1]
            shown = f"[{options.host}]" if family == socket.AF_INET6 else options.host
            allowed = _allowed_hosts(options.host, port)
            app = create_app(options.state_dir, allowed_hosts=allowed, token=options.token)
            config = uvicorn.Config(
                app, log_level="warning", lifespan="off", timeout_graceful_shutdown=_GRACEFUL_SHUTDOWN_S
            )
            web = _Uvicorn(config)
            url = f"http://{shown}:{port}/"
            sys.stderr.write(f"subagent-host: dashboard at {url} (state directory {options.state_dir})\n")
            sys.stderr.flush()
            if options.open_browser:
                import webbrowser

                webbrowser.open(url)
            async with anyio.create_task_group() as group:

                async def stop_on_signal() -> None:
                    async for _ in signals:
                        web.should_exit = True
                        return

                group.start_soon(stop_on_signal)
                await web.serve(sockets=[listener])
                group.cancel_scope.cancel()
        finally:
            listener.close()
    return True


def _allowed_hosts(host: str, port: int) -> list[str] | None:
    """The Host headers a loopback server answers to; ``None`` (any, the token guards it) for other binds."""
    if not is_loopback(host):
        return None
    names = {host, "localhost", "127.0.0.1", "[::1]"}
    if ":" in host:
        names.add(f"[{host}]")
    return sorted({f"{name}:{port}" for name in names if ":" not in name or name.startswith("[")})


def _parse_address(value: str) -> tuple[str, int]:
    host, sep, port_text = value.rpartition(":")
    if not sep:
        host, port_text = "", value
    host = host.strip("[]") or "127.0.0.1"
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise UiUsageError(f"subagent-host: --http expects HOST:PORT, got {value!r}")
    return host, port


def _read_token(path: str) -> str:
    try:
        return read_token_file(path)
    except ValueError as exc:
        raise UiUsageError(str(exc)) from None
