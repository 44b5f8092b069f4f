"""Batches as the dashboard reads them: every ``results.jsonl`` in the state directory or one level below it.

A batch's ``OUTDIR`` is a state directory of its own, so ``ui --state-dir OUTDIR`` shows that batch as ``.``; a
state directory that holds batch directories shows each under its name. Only whole lines of ``results.jsonl`` are
read (a line being appended is left for the next read), and an id's last line wins (``--redo-existing`` appends a
second one); ``summary.json`` (written when the batch starts and again when it ends) adds the total and the wall
time. A batch is running while its driver holds the ``flock`` on ``results.jsonl``. Nothing outside the state
directory is ever read: the names come from listing it. A batch's ``OUTDIR`` holds its own ``runs/`` and
``sessions/``: ``records_dir`` resolves a request's ``batch`` parameter to the directory the run and session views
read (the one place a batch name becomes a path).

A page refresh does not re-read ``results.jsonl``: ``ResultsCache`` keeps each batch's parsed items (the few fields
the page shows, never the output) keyed by the file's inode, size and ``mtime_ns``. An unchanged file is not read; a
file that grew (same inode) is read from the end of its last whole line only; a replaced or shrunk file is read
again. It holds the ``_CACHED_BATCHES`` batches used last (an LRU), so its memory stays bounded.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, cast

from host._files import open_regular
from host.records import transcript_in_progress
from host.ui._index import read_records_from

__all__ = ["BatchView", "RecordsDir", "ResultsCache", "find_batches", "load_batch", "records_dir"]

RESULTS_FILE: Final = "results.jsonl"
SUMMARY_FILE: Final = "summary.json"
_MAX_RESULTS_BYTES: Final = 256 * 1024 * 1024
"""A larger ``results.jsonl`` is read up to this bound."""
_HISTOGRAM_BINS: Final = 12
_CACHED_BATCHES: Final = 8
"""How many batches' parsed results ``ResultsCache`` keeps (the ones used last)."""
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


@dataclass(frozen=True, slots=True)
class RecordsDir:
    """Where a view reads runs and sessions: the state directory itself, or a subdirectory batch's ``OUTDIR``."""

    path: Path
    batch: str | None
    """The subdirectory batch's name, which every link to its runs and sessions carries (``None``: ``path`` is the
    state directory itself)."""


def records_dir(state_dir: Path, batch: str | None) -> RecordsDir | None:
    """The directory whose ``runs/`` and ``sessions/`` a request's ``batch`` parameter names: ``state_dir`` for none
    (or empty) and for ``.``, the batch's ``OUTDIR`` for a name ``find_batches`` lists, else ``None`` (not found).
    A name is never joined to a path before it was found in the listing, so no request reaches outside
    ``state_dir``; a symlinked directory is never listed."""
    if not batch or batch == ".":
        return RecordsDir(state_dir, None)
    if batch not in find_batches(state_dir):
        return None
    return RecordsDir(state_dir / batch, batch)


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


@dataclass(slots=True)
class _Parsed:
    """One ``results.jsonl`` as far as it was read: its identity then, and its items by id (last line wins)."""

    inode: int
    size: int
    mtime_ns: int
    consumed: int
    """The offset just past the last whole line read."""
    items: dict[str, dict[str, Any]]


class ResultsCache:
    """The parsed results of the batches read last (thread-safe: the pages load batches in worker threads)."""

    def __init__(self, max_batches: int = _CACHED_BATCHES) -> None:
        self._max_batches = max_batches
        self._parsed: OrderedDict[Path, _Parsed] = OrderedDict()
        self._lock = threading.Lock()

    def items(self, path: Path) -> list[dict[str, Any]]:
        """The items of ``path`` (a ``results.jsonl``), reading only what changed since the last call."""
        with self._lock:
            parsed = _refreshed(path, self._parsed.pop(path, None))
            if parsed is None:
                return []
            self._parsed[path] = parsed
            while len(self._parsed) > self._max_batches:
                self._parsed.popitem(last=False)
            return list(parsed.items.values())


def load_batch(state_dir: Path, name: str, cache: ResultsCache | None = None) -> BatchView | None:
    """The batch called ``name`` (one of ``find_batches``), or ``None`` when there is no such batch; ``cache`` keeps
    its parsed results between calls."""
    if name not in find_batches(state_dir):
        return None
    directory = state_dir if name == "." else state_dir / name  # a listed name
    results = (cache if cache is not None else ResultsCache(1)).items(directory / RESULTS_FILE)
    summary = _read_summary(directory / SUMMARY_FILE)
    counts: dict[str, int] = {}
    durations: list[tuple[int, dict[str, Any]]] = []
    failed: list[dict[str, Any]] = []
    run_ids: set[str] = set()
    for item in results:
        stop_reason, run_id, duration = item["stop_reason"], item["run_id"], item["duration_ms"]
        counts[stop_reason] = counts.get(stop_reason, 0) + 1
        if run_id:
            run_ids.add(run_id)
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


def _refreshed(path: Path, parsed: _Parsed | None) -> _Parsed | None:
    """``parsed`` brought up to date with the file (``None``: it cannot be read)."""
    try:
        with open_regular(path) as file:
            stat = os.fstat(file.fileno())
            if parsed is not None and (parsed.inode, parsed.size, parsed.mtime_ns) == (
                stat.st_ino,
                stat.st_size,
                stat.st_mtime_ns,
            ):
                return parsed
            grown = (
                parsed is not None
                and parsed.inode == stat.st_ino
                and stat.st_size >= parsed.size
                and (parsed.consumed == 0 or os.pread(file.fileno(), 1, parsed.consumed - 1) == b"\n")
            )
            if not grown or parsed is None:
                parsed = _Parsed(stat.st_ino, 0, 0, 0, {})
            file.seek(parsed.consumed)
            data = file.read(max(0, _MAX_RESULTS_BYTES - parsed.consumed))
    except OSError:
        return None
    records, consumed = read_records_from(data)
    for line in records:
        item = _item(line)
        parsed.items[item["id"]] = item
    parsed.size, parsed.mtime_ns, parsed.consumed = stat.st_size, stat.st_mtime_ns, parsed.consumed + consumed
    return parsed


def _item(line: dict[str, Any]) -> dict[str, Any]:
    """What the page shows of a result line (never its output)."""
    return {
        "id": _text(line.get("id")) or "?",
        "run_id": _text(line.get("run_id")),
        "stop_reason": _text(line.get("stop_reason")) or "unknown",
        "duration_ms": _int(line.get("duration_ms")),
        "diagnostic": _text(line.get("diagnostic")),
        "error_code": _text(line.get("error_code")),
    }


def _read_summary(path: Path) -> dict[str, Any]:
    try:
        with open_regular(path) as file:
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
