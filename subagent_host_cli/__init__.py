"""The ``subagent-host`` console entry: signals first, then the command line, then (only if needed) ``host``.

SIGINT, SIGTERM and SIGHUP are recorded from the first instant, before ``host`` (anyio, pydantic, the providers) is
imported, so a signal during start-up still ends with the command's promised output and the signal's exit status.
``--version`` and ``--help`` never import ``host``. Stdlib only.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import NoReturn

from subagent_host_cli import _early
from subagent_host_cli._parser import ParsedCommand, parse_command_line

__all__ = ["__version__", "main"]

__version__ = "0.1.0"


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """The ``subagent-host`` console script: run the command and exit with its status."""
    received = _early.install()
    parsed = parse_command_line(list(sys.argv[1:] if argv is None else argv), version=__version__)
    if isinstance(parsed, int):
        sys.exit(parsed)
    sys.exit(_dispatch(parsed, received))


def _dispatch(parsed: ParsedCommand, received: _early.ReceivedSignals) -> int:
    if received.first is not None:
        return _early.interrupted_before_start(received.first, as_json=parsed.as_json)
    from host.cli import run_command  # the heavy import: a signal now is recorded and honoured by the command

    return run_command(parsed.args, received)
