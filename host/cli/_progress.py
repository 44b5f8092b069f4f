"""The batch's live progress line on a stderr terminal: done/total, a bar, rate and ETA, running, counts by stop
reason; redrawn at most ``REDRAWS_PER_S`` times a second, and never off a terminal.

The line is formatted by tqdm's ``format_meter`` (bar, rate and ETA) and drawn through the CLI's one stderr status
line (``Output.status``), so a log line or a message never interleaves with it mid-line. Only counts and the
operator's own words reach it: no child text.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from typing import Final

import anyio

from host.cli._output import Output

__all__ = ["REDRAWS_PER_S", "Progress"]

REDRAWS_PER_S: Final = 4
"""The most redraws a second (the display redraws on a timer, not on every finished item)."""
_FALLBACK_COLUMNS: Final = 80


class Progress:
    """Draws the progress of a batch from ``snapshot()``: ``(done, running, counts by stop reason)``.

    Args:
        output: the CLI's output (a no-op unless its stderr is a terminal).
        total: how many items this invocation runs.
        snapshot: reads the batch's current counts.
    """

    def __init__(self, output: Output, total: int, snapshot: Callable[[], tuple[int, int, Mapping[str, int]]]) -> None:
        self._output = output
        self._total = total
        self._snapshot = snapshot
        self._started = time.monotonic()
        self._done = False
        self.redraws = 0

    @property
    def live(self) -> bool:
        """Whether anything is drawn (stderr is a terminal)."""
        return self._output.stderr_tty

    async def tick(self) -> None:
        """Redraw every 1/``REDRAWS_PER_S`` s until cancelled or ``clear``; returns at once off a terminal."""
        if not self.live:
            return
        from tqdm import tqdm  # imported only where a display is drawn

        while not self._done:
            done, running, counts = self._snapshot()
            columns = _columns()
            reasons = " ".join(f"{reason} {count}" for reason, count in sorted(counts.items()))
            line = tqdm.format_meter(
                done,
                self._total,
                time.monotonic() - self._started,
                ncols=columns - 1,
                prefix="batch",
                unit="item",
                postfix=f"running {running}" + (f", {reasons}" if reasons else ""),
            )
            self._output.status(line[: columns - 1])
            self.redraws += 1
            await anyio.sleep(1 / REDRAWS_PER_S)

    def clear(self) -> None:
        """Remove the line for good."""
        self._done = True
        if self.live:
            self._output.status(None)


def _columns() -> int:
    try:
        columns = os.get_terminal_size(2).columns
    except OSError:
        columns = 0
    return max(40, columns) if columns else _FALLBACK_COLUMNS  # a terminal of unknown width reports 0
