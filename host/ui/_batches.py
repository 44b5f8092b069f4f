"""Batches as the dashboard reads them: every ``results.jsonl`` in the state directory or one level below it.

A batch's ``OUTDIR`` is a state directory of its own, so ``ui --state-dir OUTDIR`` shows that batch as ``.``; a
state directory that holds batch directories shows each under its name. Only whole lines of ``results.jsonl`` are
read (a line being appended is left for the next read), and an id's last line wins (``--redo-existing`` appends a
second one); ``summary.json`` (written when the batch starts and again when it ends) adds the total and the wall
time. A batch is running while its driver holds the ``flock`` on ``results.jsonl``. Nothing outside the state
directory is ever read: the names come from listing it.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, cast

from host.records import transcript_in_progress
from host.ui._index import read_records_from

__all__ = ["BatchView", "find_batches", "load_batch"]

RESULTS_FILE: Final = "results.jsonl"
SUMMARY_FILE: Final = "summary.json"
_MAX_RESULTS_BYTES: Final = 256 * 1024 * 1024
"""A larger ``results.jsonl`` is read up to this bound."""
_HISTOGRAM_BINS: Final = 12
_SLOWEST: Final = 10


@dataclass(slots=True)
class BatchView:
    """What the batch page shows."""

    name: str
    done: int
    total: int | None
    counts: dict[str, int]
    """Finished items by stop reason."""
    histogram: list[tuple[float, float, int]]
    """Duration bins: ``(from_ms, to_ms, count)``."""
    slowest: list[dict[str, Any]]
    failed: list[dict[str, Any]]
    wall_ms: int | None
    running: bool = False
    run_ids: frozenset[str] = field(default_factory=frozenset[str])


def find_batches(state_dir: Path) -> list[str]:
    """The names of the batches under ``state_dir`` (``.`` for the state directory itself), sorted."""
    names: list[str] = []
    if (state_dir / RESULTS_FILE).is_file():
        names.append(".")
    try:
        with os.scandir(state_dir) as listing:
            names.extend(
                entry.name
                for entry in listing
                if entry.is_dir(follow_symlinks=False) and (Path(entry.path) / RESULTS_FILE).is_file()
            )
    except OSError:
        pass
    return sorted(names)


def load_batch(state_dir: Path, name: str) -> BatchView | None:
    """The batch called ``name`` (one of ``find_batches``), or ``None`` when there is no such batch."""
    if name not in find_batches(state_dir):
        return None
    directory = state_dir if name == "." else state_dir / name
    results = list({_text(line.get("id")) or "?": line for line in _read_results(directory / RESULTS_FILE)}.values())
    summary = _read_summary(directory / SUMMARY_FILE)
    counts: dict[str, int] = {}
    durations: list[tuple[int, dict[str, Any]]] = []
    failed: list[dict[str, Any]] = []
    run_ids: set[str] = set()
    for line in results:
        stop_reason = _text(line.get("stop_reason")) or "unknown"
        counts[stop_reason] = counts.get(stop_reason, 0) + 1
        run_id = _text(line.get("run_id"))
        if run_id:
            run_ids.add(run_id)
        duration = _int(line.get("duration_ms"))
        item: dict[str, Any] = {
            "id": _text(line.get("id")) or "?",
            "run_id": run_id,
            "stop_reason": stop_reason,
            "duration_ms": duration,
            "diagnostic": _text(line.get("diagnostic")),
            "error_code": _text(line.get("error_code")),
        }
        if duration is not None:
            durations.append((duration, item))
        if stop_reason != "completed":
            failed.append(item)
    durations.sort(key=lambda pair: pair[0], reverse=True)
    total = _int(summary.get("total"))
    return BatchView(
        name=name,
        done=len(results),
        total=total,
        counts=dict(sorted(counts.items(), key=lambda pair: (-pair[1], pair[0]))),
        histogram=_histogram([duration for duration, _ in durations]),
        slowest=[item for _, item in durations[:_SLOWEST]],
        failed=failed,
        wall_ms=_int(summary.get("wall_ms")) or None,
        running=transcript_in_progress(directory / RESULTS_FILE),  # the batch holds its lock; never probed empty
        run_ids=frozenset(run_ids),
    )


def _read_results(path: Path) -> list[dict[str, Any]]:
    try:
        with open(path, "rb") as file:
            data = file.read(_MAX_RESULTS_BYTES)
    except OSError:
        return []
    records, _ = read_records_from(data)
    return records


def _read_summary(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as file:
            value = json.loads(file.read(16 * 1024 * 1024))
    except (OSError, ValueError):
        return {}
    return cast("dict[str, Any]", value) if isinstance(value, dict) else {}


def _histogram(durations: list[int]) -> list[tuple[float, float, int]]:
    if not durations:
        return []
    low, high = min(durations), max(durations)
    if high == low:
        return [(float(low), float(high), len(durations))]
    width = (high - low) / _HISTOGRAM_BINS
    bins = [0] * _HISTOGRAM_BINS
    for duration in durations:
        bins[min(_HISTOGRAM_BINS - 1, math.floor((duration - low) / width))] += 1
    return [(low + i * width, low + (i + 1) * width, count) for i, count in enumerate(bins)]


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
