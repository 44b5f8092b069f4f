"""What every command shares: the exit statuses, the JSON line, the usage failure and the signal watcher."""

from __future__ import annotations

import json
import signal
from collections.abc import AsyncIterator, Callable
from types import FrameType
from typing import Any, Final, Protocol

from host.cli._output import Output

__all__ = [
    "EXIT_BROKEN_STDOUT",
    "EXIT_BY_SIGNAL",
    "EXIT_USAGE",
    "HANDLED_SIGNALS",
    "JSON_SCHEMA_VERSION",
    "RecordedSignals",
    "exit_of_stop_reason",
    "json_line",
    "usage_failure",
    "watch_signals",
]

EXIT_USAGE: Final = 2
JSON_SCHEMA_VERSION: Final = 1
"""The ``schema`` member that leads every JSON object the CLI prints."""
EXIT_BROKEN_STDOUT: Final = 141
"""128 + SIGPIPE: stdout was closed or its reader went away."""
HANDLED_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
EXIT_BY_SIGNAL: Final = {signal.SIGHUP: 129, signal.SIGINT: 130, signal.SIGTERM: 143}
_EXIT_BY_STOP_REASON: Final[dict[str, int]] = {"completed": 0, "refusal": 3, "max-tokens": 4}


class RecordedSignals(Protocol):
    """The console entry's early signal recorder."""

    @property
    def first(self) -> signal.Signals | None:
        """The first SIGINT, SIGTERM or SIGHUP received so far."""
        ...

    def reinstall(self) -> None:
        """Put the recorder back after an event loop's receiver restored the default handlers."""
        ...

    def record(self, signum: int, _frame: FrameType | None = None) -> None:
        """Keep ``signum`` as the first signal unless one was already kept."""
        ...


def exit_of_stop_reason(stop_reason: str) -> int:
    """0 completed, 3 refusal, 4 max-tokens, 1 for an error or an abort."""
    return _EXIT_BY_STOP_REASON.get(stop_reason, 1)


def json_line(obj: dict[str, Any], *, terminal: bool = False) -> str:
    """One JSON object led by ``"schema": 1`` and a newline; readable UTF-8, or ASCII escapes when the text holds
    lone surrogates.

    On a terminal every non-ASCII character is escaped too, so C1 controls in child text cannot drive it.
    """
    obj = {"schema": JSON_SCHEMA_VERSION, **{key: value for key, value in obj.items() if key != "schema"}}
    line = json.dumps(obj, ensure_ascii=terminal)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        # A child may stream half of a surrogate pair; `\\udxxx` escapes keep the object valid and lossless.
        line = json.dumps(obj, ensure_ascii=True)
    return line + "\n"


def usage_failure(output: Output, message: str, *, as_json: bool) -> int:
    """Report a usage or config error (stderr, and ``{"error"}`` under ``--json``); exit 2."""
    output.err(message + "\n")
    if as_json:
        output.out(json_line({"error": message}))
    return EXIT_USAGE


async def watch_signals(signals: AsyncIterator[int], on_signal: Callable[[signal.Signals], None]) -> None:
    """Call ``on_signal`` for every received signal (the callee absorbs repeats)."""
    async for received in signals:
        on_signal(signal.Signals(received))
