"""``serve``'s options: validating the parsed command-line arguments into ``ServeOptions``.

The arguments themselves are defined in the stdlib-only console entry; its defaults are repeated here (a test pins
that they agree), so nothing under ``host.server`` imports the console package.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Final

from host._token_file import is_loopback, read_token_file

__all__ = [
    "DEFAULT_HTTP_HOST",
    "DEFAULT_MAX_CONCURRENT_RUNS",
    "ServeOptions",
    "ServeUsageError",
    "is_loopback",
    "parse_serve_options",
]

DEFAULT_MAX_CONCURRENT_RUNS: Final = 8
"""The run limit when neither ``--max-concurrent-runs`` nor ``[host] max_concurrent_runs`` sets one (as the config)."""
DEFAULT_HTTP_HOST: Final = "127.0.0.1"
"""Where ``--http PORT`` or ``--http :PORT`` binds."""


class ServeUsageError(Exception):
    """A bad ``serve`` argument: exit 2 with a one-line message."""


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """The validated ``serve`` arguments."""

    config: str | None = None
    max_concurrent_runs: int | None = None
    """The host-wide run limit (``None``: the config's ``[host] max_concurrent_runs``)."""
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
    if args.max_concurrent_runs is not None and args.max_concurrent_runs < 1:
        raise ServeUsageError("subagent-host: --max-concurrent-runs must be at least 1")
    http = _parse_http(args.http) if args.http is not None else None
    token = _read_token(args.auth_token_file) if args.auth_token_file is not None else None
    if token is not None and http is None:
        raise ServeUsageError("subagent-host: --auth-token-file needs --http")
    if http is not None and token is None and not is_loopback(http[0]):
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


def _read_token(path: str) -> str:
    try:
        return read_token_file(path)
    except ValueError as exc:
        raise ServeUsageError(str(exc)) from None
