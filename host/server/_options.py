"""The ``serve`` command: validating its parsed arguments, and the entry point the CLI dispatches to.

The arguments themselves are defined once, in the stdlib-only console entry (``subagent_host_cli._parser``).
Nothing here imports the MCP SDK: ``run`` and the parser pay nothing for it; ``run_serve`` imports it lazily.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import signal
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from subagent_host_cli._early import EXIT_BY_SIGNAL
from subagent_host_cli._parser import DEFAULT_HTTP_HOST, DEFAULT_MAX_CONCURRENT_RUNS

__all__ = ["DEFAULT_HTTP_HOST", "DEFAULT_MAX_CONCURRENT_RUNS", "ServeOptions", "run_serve"]

_EXIT_OK: Final = 0
_EXIT_USAGE: Final = 2

EarlySignal = Callable[[], signal.Signals | None]
"""The first signal the console entry recorded before serving started (``None``: none)."""


class ServeUsageError(Exception):
    """A bad ``serve`` argument: exit 2 with a one-line message."""


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """The validated ``serve`` arguments."""

    config: str | None = None
    max_concurrent_runs: int = DEFAULT_MAX_CONCURRENT_RUNS
    http: tuple[str, int] | None = None
    """``(host, port)`` to serve Streamable HTTP on; ``None`` serves stdio."""
    auth_token: str | None = None
    """The bearer token every HTTP request must carry, read from ``--auth-token-file``."""
    state_dir: str | None = None
    """Record every run under ``<state_dir>/runs/`` (``None``: ``--no-record``)."""


def parse_serve_options(args: argparse.Namespace) -> ServeOptions:
    """Validate the parsed ``serve`` arguments.

    Raises:
        ServeUsageError: a bad limit, address or token file.
    """
    if args.max_concurrent_runs < 1:
        raise ServeUsageError("subagent-host: --max-concurrent-runs must be at least 1")
    http = _parse_http(args.http) if args.http is not None else None
    token = _read_token(args.auth_token_file) if args.auth_token_file is not None else None
    if token is not None and http is None:
        raise ServeUsageError("subagent-host: --auth-token-file needs --http")
    if http is not None and token is None and not _is_loopback(http[0]):
        raise ServeUsageError(f"subagent-host: binding {http[0]} (not loopback) requires --auth-token-file")
    from host.records import resolve_state_dir

    state_dir = None if args.no_record else str(resolve_state_dir(args.state_dir))
    return ServeOptions(
        config=args.config,
        max_concurrent_runs=args.max_concurrent_runs,
        http=http,
        auth_token=token,
        state_dir=state_dir,
    )


def run_serve(args: argparse.Namespace, *, early_signal: EarlySignal, owns_process: bool = False) -> int:
    """Run ``serve`` to completion and return the exit status.

    0 after a clean shutdown, 2 on a usage error, 128 + N when signal N arrived before serving started.
    """
    logging.basicConfig(level=logging.WARNING, format="subagent-host: %(levelname)s %(name)s: %(message)s")
    from host._exceptions import ConfigError
    from host.config import load_config

    try:
        options = parse_serve_options(args)
        config = load_config(options.config)
    except ServeUsageError as exc:
        sys.stderr.write(f"{exc}\n")
        return _EXIT_USAGE
    except ConfigError as exc:
        where = f" (providers.{exc.provider})" if exc.provider is not None else ""
        sys.stderr.write(f"{exc}{where}\n")
        return _EXIT_USAGE
    import anyio

    from host.process import adopt_orphans
    from host.server._app import serve

    if owns_process:
        # A grandchild that setsid()-s away from its parent is adopted and swept before exiting.
        adopt_orphans()
    served = anyio.run(serve, options, config, early_signal)  # False: a signal came before serving started
    if not served:
        received = early_signal()
        assert received is not None
        sys.stderr.write(f"subagent-host: interrupted by {received.name} before serving started\n")
        return EXIT_BY_SIGNAL[received]
    if owns_process:
        # Every run, job and orphan is gone. Finalizing the SDK's large module graph takes seconds on a loaded box,
        # longer than the client's grace before it SIGTERMs us: flush and leave now.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_EXIT_OK)
    return _EXIT_OK


def _parse_http(value: str) -> tuple[str, int]:
    host, sep, port_text = value.rpartition(":")
    if not sep:
        host, port_text = "", value
    host = host.strip("[]") or DEFAULT_HTTP_HOST
    try:
        port = int(port_text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise ServeUsageError(f"subagent-host: --http expects HOST:PORT, got {value!r}")
    return host, port


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _read_token(path: str) -> str:
    try:
        info = os.stat(path)
        with open(path, encoding="utf-8") as file:
            token = file.read().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ServeUsageError(f"subagent-host: cannot read --auth-token-file: {exc.__class__.__name__}") from None
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise ServeUsageError("subagent-host: --auth-token-file must not be readable by group or others (chmod 600)")
    if not token:
        raise ServeUsageError("subagent-host: --auth-token-file is empty")
    return token
