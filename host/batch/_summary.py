"""``summary.json``: what a batch's selected items came to, written at the end of every invocation (also a stopped
one) with temp-then-rename, so a reader never sees half of it.

Counts are by stop reason over every selected item that has a result (earlier invocations included); durations
are nearest-rank percentiles; ``failed`` lists every item that did not complete with its closed diagnostic.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from host._files import write_file_atomically
from host.batch._results import RESULT_SCHEMA, DoneItem

__all__ = ["SUMMARY_FILE_NAME", "BatchSummary", "write_summary"]

SUMMARY_FILE_NAME: Final = "summary.json"


@dataclass(slots=True)
class BatchSummary:
    """The running tally of one batch invocation over its selected ids."""

    selected: list[str]
    """The ids this invocation covers (after ``--slice``), in input order."""
    done: dict[str, DoneItem] = field(default_factory=dict[str, DoneItem])
    """The result of every selected id that has one (the last line of an id wins)."""
    skipped: int = 0
    """How many selected ids had a result before this invocation and were not run again."""
    ran: int = 0
    """How many items this invocation wrote a result for."""
    retried: int = 0
    """How many of those needed more than one attempt."""
    stopped_by: str | None = None
    """The signal name that stopped this invocation, if one did."""
    wall_ms: float = 0.0

    def record(self, item_id: str, done: DoneItem, *, attempts: int) -> None:
        """Count one result written by this invocation."""
        self.done[item_id] = done
        self.ran += 1
        if attempts > 1:
            self.retried += 1

    @property
    def pending(self) -> int:
        """Selected items without a result (not started, or stopped: a resume runs them)."""
        return len(self.selected) - len(self.done)

    @property
    def all_completed(self) -> bool:
        """Every selected item has a result and every result is ``completed``."""
        return self.pending == 0 and all(done.stop_reason == "completed" for done in self.done.values())

    def counts(self) -> dict[str, int]:
        """Results by stop reason."""
        return dict(Counter(done.stop_reason for done in self.done.values()))

    def to_json(self) -> dict[str, Any]:
        """The ``summary.json`` object."""
        durations = sorted(done.duration_ms for done in self.done.values())
        failed = [
            {
                "id": item_id,
                "stop_reason": self.done[item_id].stop_reason,
                **_present(diagnostic=self.done[item_id].diagnostic, error_code=self.done[item_id].error_code),
            }
            for item_id in self.selected
            if item_id in self.done and self.done[item_id].stop_reason != "completed"
        ]
        return {
            "schema": RESULT_SCHEMA,
            "total": len(self.selected),
            "done": len(self.done),
            "pending": self.pending,
            "ran": self.ran,
            "skipped": self.skipped,
            "retried": self.retried,
            "counts": self.counts(),
            "duration_ms": {
                "p50": _percentile(durations, 50),
                "p95": _percentile(durations, 95),
                "max": durations[-1] if durations else None,
            },
            "failed": failed,
            "wall_ms": round(self.wall_ms),
            "stopped_by": self.stopped_by,
        }


def write_summary(outdir: Path, summary: Mapping[str, Any]) -> None:
    """Write ``outdir/summary.json`` (0600) through a temporary file and a rename.

    Raises:
        OSError: it could not be written.
    """
    write_file_atomically(outdir, SUMMARY_FILE_NAME, (json.dumps(summary, indent=2) + "\n").encode("utf-8"))


def _percentile(sorted_values: list[float], percent: int) -> float | None:
    if not sorted_values:
        return None
    rank = max(1, math.ceil(percent / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def _present(**values: str | None) -> dict[str, str]:
    return {key: value for key, value in values.items() if value is not None}
