"""The dashboard's derived index of runs: one summary per transcript, refreshed from the JSONL records.

The records stay the source of truth. The index is held in memory and keyed by each transcript's
``(st_mtime_ns, st_size)``. A transcript is only ever appended to while its run is in progress, and the runs
directory's own mtime changes whenever a transcript is created or removed; so a refresh lists the directory (one
``scandir``, no file opened) only when that mtime moved, and otherwise re-checks just the runs it last saw in
progress. A warm query over 10 000 finished runs costs a ``stat`` of the directory plus a filter. A summary reads
a transcript's head (``run/start`` and ``prompt``) and its last line (``run/end``), never the whole stream. A run
without ``run/end`` is ``running`` while its writer holds the transcript's lock, and ``incomplete`` otherwise; the
lock is probed only for those. A batch ``OUTDIR`` below the state directory is a state directory of its own, with
its own index (``RunIndexes``).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Final, cast

from host._files import open_regular
from host.records import prompt_text, transcript_in_progress

__all__ = ["RunFilter", "RunIndex", "RunIndexes", "RunRow", "read_records_from"]

_SUFFIX: Final = ".jsonl"
_IN_PROGRESS: Final = frozenset({"starting", "running"})
_HEAD_BYTES: Final = 256 * 1024
"""How much of a transcript's head is read for ``run/start`` and ``prompt``."""
_TAIL_BYTES: Final = 64 * 1024
"""How much of a transcript's tail is read for its last record (``run/end``)."""
TASK_PREVIEW_CHARS: Final = 120
"""How many characters of the task a row shows."""
_SEARCH_CHARS: Final = 4096
"""How many characters of the task the text search looks at."""
_CACHED_BATCH_INDEXES: Final = 4
"""How many subdirectory batches' run indexes ``RunIndexes`` keeps besides the state directory's (used last)."""


@dataclass(frozen=True, slots=True)
class RunRow:
    """One run as the runs page lists it."""

    run_id: str
    start_time: str | None
    started: float
    """The start as a POSIX timestamp (the file's mtime when ``run/start`` is unreadable): the sort key."""
    provider: str | None
    status: str
    """The stop reason, or ``starting`` / ``running`` / ``incomplete`` when there is no ``run/end``."""
    duration_ms: int | None
    task: str
    """The first ``TASK_PREVIEW_CHARS`` characters of the prompt's text (child-independent, but still escaped)."""
    search_text: str
    """The lower-cased start of the task, for the text filter."""
    session_id: str | None
    turn: int | None
    """The run's turn in its session (``run/start``'s ``turn``)."""
    cause: str | None

    def as_json(self) -> dict[str, Any]:
        """The row as the JSON endpoint serves it."""
        return {
            "run_id": self.run_id,
            "start_time": self.start_time,
            "provider": self.provider,
            "status": self.status,
            "duration_ms": self.duration_ms,
            "task": self.task,
            "session_id": self.session_id,
            "turn": self.turn,
            "cause": self.cause,
        }


@dataclass(frozen=True, slots=True)
class RunFilter:
    """What the runs page filters on; ``None`` (or empty) matches everything."""

    provider: str | None = None
    status: str | None = None
    session_id: str | None = None
    run_ids: frozenset[str] | None = None
    """Only these runs (a batch's runs)."""
    text: str | None = None

    def matches(self, row: RunRow) -> bool:
        """Whether ``row`` passes every filter that is set."""
        if self.provider and row.provider != self.provider:
            return False
        if self.status and row.status != self.status:
            return False
        if self.session_id and row.session_id != self.session_id:
            return False
        if self.run_ids is not None and row.run_id not in self.run_ids:
            return False
        return not self.text or self.text.lower() in row.search_text


@dataclass(frozen=True, slots=True)
class _Entry:
    stamp: tuple[int, int]
    row: RunRow


class RunIndex:
    """Summaries of every transcript under ``<state_dir>/runs``; thread-safe (one refresh at a time)."""

    def __init__(self, state_dir: Path) -> None:
        self._runs = state_dir / "runs"
        self._entries: dict[str, _Entry] = {}
        self._listed_mtime_ns: int | None = None
        self._sorted: list[RunRow] | None = None
        self._lock = threading.Lock()

    def refresh(self) -> list[RunRow]:
        """Bring the index up to date with the directory; return every row, newest first."""
        with self._lock:
            try:
                listed_mtime_ns: int | None = self._runs.stat().st_mtime_ns
            except OSError:
                listed_mtime_ns = None
            if listed_mtime_ns is None or listed_mtime_ns != self._listed_mtime_ns:
                changed = self._relist()
                self._listed_mtime_ns = listed_mtime_ns
            else:
                changed = self._recheck_running()
            if changed or self._sorted is None:
                rows = [entry.row for entry in self._entries.values()]
                rows.sort(key=lambda row: (row.started, row.run_id), reverse=True)
                self._sorted = rows
            return self._sorted

    def _relist(self) -> bool:
        """Summarise every transcript that is new or changed; drop the removed ones. Whether anything changed."""
        seen: dict[str, _Entry] = {}
        changed = False
        for entry in _transcript_entries(self._runs):
            run_id = entry.name[: -len(_SUFFIX)]
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            known = self._entries.get(run_id)
            fresh = self._summary_of(Path(entry.path), run_id, known, info)
            changed = changed or fresh is not known
            seen[run_id] = fresh
        changed = changed or len(seen) != len(self._entries)
        self._entries = seen
        return changed

    def _recheck_running(self) -> bool:
        """Re-read the runs last seen in progress (the only transcripts that can still change)."""
        changed = False
        for run_id, known in list(self._entries.items()):
            if known.row.status not in _IN_PROGRESS:
                continue
            path = self._runs / f"{run_id}{_SUFFIX}"
            try:
                info = path.stat()
            except OSError:
                del self._entries[run_id]
                changed = True
                continue
            fresh = self._summary_of(path, run_id, known, info)
            if fresh is not known:
                self._entries[run_id] = fresh
                changed = True
        return changed

    @staticmethod
    def _summary_of(path: Path, run_id: str, known: _Entry | None, info: os.stat_result) -> _Entry:
        stamp = (info.st_mtime_ns, info.st_size)
        if known is not None and known.stamp == stamp and known.row.status not in _IN_PROGRESS:
            return known
        row = _summarise(path, run_id, info.st_mtime)
        if known is not None and known.row == row and known.stamp == stamp:
            return known
        return _Entry(stamp, row)

    def query(self, run_filter: RunFilter, *, limit: int, offset: int = 0) -> tuple[list[RunRow], int]:
        """The rows that pass ``run_filter``, newest first: ``(the page, how many matched in all)``."""
        rows = self.refresh()
        if run_filter == RunFilter():
            return rows[offset : offset + limit], len(rows)
        matched = [row for row in rows if run_filter.matches(row)]
        return matched[offset : offset + limit], len(matched)

    def providers(self) -> list[str]:
        """Every provider name the index has seen, sorted."""
        with self._lock:
            names = {entry.row.provider for entry in self._entries.values() if entry.row.provider}
        return sorted(cast("Iterable[str]", names))


class RunIndexes:
    """One ``RunIndex`` per state directory: the dashboard's own, always kept, and those of the subdirectory
    batches viewed last (an LRU of ``max_batches``, so memory stays bounded however many batches are browsed; an
    evicted batch's index is built again on its next view). Thread-safe."""

    def __init__(self, state_dir: Path, max_batches: int = _CACHED_BATCH_INDEXES) -> None:
        self._state_dir = state_dir
        self._own = RunIndex(state_dir)
        self._max_batches = max_batches
        self._batches: OrderedDict[Path, RunIndex] = OrderedDict()
        self._lock = threading.Lock()

    def of(self, directory: Path) -> RunIndex:
        """The index of ``directory`` (the state directory, or a batch ``OUTDIR`` the caller found listed)."""
        if directory == self._state_dir:
            return self._own
        with self._lock:
            index = self._batches.pop(directory, None) or RunIndex(directory)
            self._batches[directory] = index
            while len(self._batches) > self._max_batches:
                self._batches.popitem(last=False)
            return index


def _transcript_entries(runs: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(runs) as listing:
            return [e for e in listing if e.name.endswith(_SUFFIX) and e.is_file(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return []


def _summarise(path: Path, run_id: str, mtime: float) -> RunRow:
    head, last = _head_and_last(path)
    start = _first(head, "run/start")
    prompt = _first(head, "prompt")
    end = last if last is not None and last.get("type") == "run/end" else _first(head, "run/end")
    start_data, end_data = _data(start), _data(end)
    task = prompt_text(_data(prompt).get("content"))
    start_time = start.get("time") if start is not None else None
    duration = end_data.get("duration_ms")
    if end is not None:
        stop_reason = end_data.get("stop_reason")
        status = stop_reason if isinstance(stop_reason, str) else "unknown"
    else:
        status = _in_progress_status(head) if transcript_in_progress(path) else "incomplete"
    return RunRow(
        run_id=run_id,
        start_time=start_time if isinstance(start_time, str) else None,
        started=_timestamp(start_time, mtime),
        provider=_text_or_none(start_data.get("provider")),
        status=status,
        duration_ms=duration if isinstance(duration, int) and not isinstance(duration, bool) else None,
        task=task[:TASK_PREVIEW_CHARS],
        search_text=task[:_SEARCH_CHARS].lower(),
        session_id=_text_or_none(start_data.get("session_id")),
        turn=_int_or_none(start_data.get("turn")),
        cause=_text_or_none(end_data.get("cause")),
    )


def _in_progress_status(head: list[dict[str, Any]]) -> str:
    """``starting`` until the handshake passed (as ``runs list`` says), then ``running``."""
    return "running" if _first(head, "handshake") is not None or _first(head, "chunk") is not None else "starting"


def _head_and_last(path: Path) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The parsed records of the transcript's head, and its last complete record."""
    try:
        with open_regular(path) as file:  # a FIFO or symlink put there since the listing: unreadable, no wait
            head_bytes = file.read(_HEAD_BYTES)
            size = os.fstat(file.fileno()).st_size
            if size > len(head_bytes):
                file.seek(max(0, size - _TAIL_BYTES))
                tail_bytes = file.read(_TAIL_BYTES)
            else:
                tail_bytes = head_bytes
    except OSError:
        return [], None
    head, _ = read_records_from(head_bytes)
    tail_lines = [line for line in tail_bytes.split(b"\n")[:-1] if line.strip()]
    last = _parse(tail_lines[-1]) if tail_lines else None
    return head, last


def read_records_from(data: bytes) -> tuple[list[dict[str, Any]], int]:
    """The records of the complete lines of ``data``, and how many bytes they span (a partial last line is left).

    A complete line that is not a JSON object is skipped (the writer never produces one).
    """
    records: list[dict[str, Any]] = []
    consumed = 0
    while True:
        newline = data.find(b"\n", consumed)
        if newline < 0:
            return records, consumed
        record = _parse(data[consumed:newline])
        if record is not None:
            records.append(record)
        consumed = newline + 1


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return cast("dict[str, Any]", value) if isinstance(value, dict) else None


def _first(records: list[dict[str, Any]], record_type: str) -> dict[str, Any] | None:
    return next((record for record in records if record.get("type") == record_type), None)


def _data(record: dict[str, Any] | None) -> dict[str, Any]:
    data = record.get("data") if record is not None else None
    return cast("dict[str, Any]", data) if isinstance(data, dict) else {}


def _text_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _timestamp(start_time: object, fallback: float) -> float:
    if isinstance(start_time, str):
        with contextlib.suppress(ValueError):
            return datetime.fromisoformat(start_time).timestamp()
    return fallback
