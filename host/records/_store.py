"""Reading the runs directory: summaries newest first, one run's records by a unique id prefix, and pruning.

A run is in progress while its writer holds the ``flock`` on its ``.jsonl`` (a lock dies with its process, so a
killed host leaves no stale one). A transcript without ``run/end`` whose lock is free is ``incomplete``; nothing
here ever rewrites a transcript, and pruning never removes a run in progress.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import threading
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, cast

from host._files import open_regular, read_regular
from host.config import DEFAULT_KEEP_RUNS
from host.records._paths import runs_dir
from host.records._writer import STDERR_TAIL_BYTES, jsonl_path, stderr_path

__all__ = [
    "DEFAULT_KEEP_RUNS",
    "MAX_RECORD_BYTES",
    "TASK_PREVIEW_CHARS",
    "AmbiguousRunError",
    "PruneOutcome",
    "RunNotFoundError",
    "RunSummary",
    "StoredRun",
    "count_transcripts",
    "find_run",
    "find_transcript",
    "list_runs",
    "prompt_text",
    "prune_runs",
    "read_records",
    "transcript_in_progress",
]

MAX_RECORD_BYTES: Final = 64 << 20
"""The longest transcript line read (``read_records``) or buffered (``TranscriptTail``); a longer one is not."""
TASK_PREVIEW_CHARS: Final = 60
"""How many characters of the task a summary shows."""

_SUFFIX: Final = ".jsonl"
_IN_PROGRESS: Final = frozenset({"starting", "running"})
_MAX_STDERR_BYTES: Final = 4 * STDERR_TAIL_BYTES
"""The largest stderr tail read (the writer keeps ``STDERR_TAIL_BYTES``); a larger file is not shown."""


class RunNotFoundError(LookupError):
    """No recorded run id starts with the given prefix."""


class AmbiguousRunError(LookupError):
    """Several recorded run ids start with the given prefix; ``candidates`` lists them."""

    def __init__(self, prefix: str, candidates: list[str]) -> None:
        super().__init__(prefix)
        self.candidates = candidates


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One line of ``runs list``."""

    run_id: str
    start_time: str | None
    provider: str | None
    duration_ms: int | None
    status: str
    """The stop reason, or ``starting`` / ``running`` / ``incomplete`` when there is no ``run/end``."""
    task: str
    """The first ``TASK_PREVIEW_CHARS`` characters of the prompt's text."""
    usage: dict[str, Any] | None = None
    """The ``run/end`` usage totals, when the child reported usage."""
    cause: str | None = None
    """The closed ``cause`` of ``run/end`` (``None``: no ``run/end``, or a record from before causes existed)."""
    session_id: str | None = None
    """The session the run was a turn of (``None`` for a run recorded outside any session)."""


@dataclass(frozen=True, slots=True)
class StoredRun:
    """One recorded run: its records, its status and its stderr tail (``None`` when no tail was kept)."""

    run_id: str
    records: list[dict[str, Any]]
    status: str
    stderr: bytes | None


@dataclass(frozen=True, slots=True)
class PruneOutcome:
    """What ``prune_runs`` did."""

    removed: list[str]
    in_progress: list[str]
    """Runs past the limit that were kept because they are in progress."""


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of one transcript, in order; a line that does not parse, or one longer than ``MAX_RECORD_BYTES``,
    ends the read (lenient).

    Raises:
        OSError: the transcript cannot be opened, or it is not a regular file (``host._files.open_regular``).
    """
    records: list[dict[str, Any]] = []
    with open_regular(path) as file:
        while raw := file.readline(MAX_RECORD_BYTES + 1):
            if len(raw) > MAX_RECORD_BYTES:
                break
            try:
                record = json.loads(raw)
            except ValueError:
                break
            if not isinstance(record, dict):
                break
            records.append(cast("dict[str, Any]", record))
    return records


def list_runs(state_dir: Path, limit: int | None = None, *, in_progress_only: bool = False) -> list[RunSummary]:
    """Summaries of the recorded runs, newest first (at most ``limit``).

    ``in_progress_only`` keeps the runs whose writer holds the transcript's lock (only those files are read).
    """
    paths = _sorted_transcripts(state_dir)
    if in_progress_only:
        paths = [path for path in paths if transcript_in_progress(path)]
    summaries = [_summary(path) for path in (paths if limit is None else paths[:limit])]
    return summaries


def find_run(state_dir: Path, prefix: str) -> StoredRun:
    """The run whose id is ``prefix`` or uniquely starts with it.

    Raises:
        RunNotFoundError: no run id starts with ``prefix`` (or its transcript went, or stopped being a regular
            file, since the listing).
        AmbiguousRunError: several do (and none equals it).
    """
    path = find_transcript(state_dir, prefix)
    runs, run_id = path.parent, path.name[: -len(_SUFFIX)]
    try:
        records = read_records(path)
    except OSError:  # removed, or replaced by something not a regular file, since the listing
        raise RunNotFoundError(prefix) from None
    try:
        stderr: bytes | None = read_regular(stderr_path(runs, run_id), _MAX_STDERR_BYTES)
    except OSError:  # none kept; or not a regular file of at most _MAX_STDERR_BYTES (the host never writes one)
        stderr = None
    return StoredRun(run_id, records, _status(path, records), stderr)


def find_transcript(state_dir: Path, prefix: str) -> Path:
    """The transcript file of the run whose id is ``prefix`` or uniquely starts with it.

    Raises:
        RunNotFoundError: no run id starts with ``prefix``.
        AmbiguousRunError: several do (and none equals it).
    """
    runs = runs_dir(state_dir)
    ids = sorted(path.name[: -len(_SUFFIX)] for path in _transcripts(runs))
    matches = [run_id for run_id in ids if run_id.startswith(prefix)] if prefix else []
    if prefix in matches:
        matches = [prefix]
    if not matches:
        raise RunNotFoundError(prefix)
    if len(matches) > 1:
        raise AmbiguousRunError(prefix, matches)
    return jsonl_path(runs, matches[0])


def transcript_in_progress(path: Path) -> bool:
    """Whether a writer holds the transcript's lock; an empty file is one being created, in progress too.

    An empty file is never probed: its writer is between creating it and locking it, and a probe holding the lock in
    that instant would make the writer's own non-blocking lock fail.
    """
    try:
        if path.stat().st_size == 0:
            return True
    except FileNotFoundError:
        return False
    return _locked(path)


def prune_runs(state_dir: Path, keep: int) -> PruneOutcome:
    """Remove all but the newest ``keep`` runs (transcript and stderr tail); never a run in progress."""
    runs = runs_dir(state_dir)
    removed: list[str] = []
    in_progress: list[str] = []
    for path in _sorted_transcripts(state_dir, skip=keep):
        run_id = path.name[: -len(_SUFFIX)]
        with _exclusive(path) as acquired:
            if not acquired:
                in_progress.append(run_id)
                continue
            with contextlib.suppress(FileNotFoundError):
                stderr_path(runs, run_id).unlink()
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            removed.append(run_id)
    return PruneOutcome(removed, in_progress)


def count_transcripts(state_dir: Path) -> int:
    """How many transcripts the runs directory holds (cheap: no file is read, no ``Path`` is built; every run)."""
    return sum(1 for _ in _transcript_entries(runs_dir(state_dir)))


# -- helpers -----------------------------------------------------------------------------------------------------


def _transcripts(runs: Path) -> Iterator[Path]:
    for entry in _transcript_entries(runs):
        yield Path(entry.path)


def _transcript_entries(runs: Path) -> Iterator[os.DirEntry[str]]:
    try:
        entries = list(os.scandir(runs))
    except FileNotFoundError:
        return
    for entry in entries:
        if entry.name.endswith(_SUFFIX) and entry.is_file(follow_symlinks=False):
            yield entry


_START_TIMES_DIRS: Final = 8
_start_times_lock: Final = threading.Lock()  # listings also run in worker threads (the dashboard, the CLI)
_start_times: dict[str, dict[str, tuple[tuple[int, int, int], float]]] = {}
"""Per runs directory, the ``run/start`` time read from each transcript, by name with the inode, ``mtime_ns`` and
size it had then: a finished transcript never changes, so retention after every run reads only new or changed ones
(it read every transcript's first line, ~16 ms per run for 1000 of them). Each directory's map holds only the
transcripts of its last listing; a few directories are remembered, the oldest forgotten first."""


def _sorted_transcripts(state_dir: Path, skip: int = 0) -> list[Path]:
    """Transcripts newest first, by their ``run/start`` time (file modification time when it is unreadable), from
    the ``skip``-th on (a ``Path`` is built only for those)."""
    runs = runs_dir(state_dir)
    with _start_times_lock:
        known = _start_times.pop(str(runs), {})
    seen: dict[str, tuple[tuple[int, int, int], float]] = {}
    keyed: list[tuple[float, str, str]] = []
    for entry in _transcript_entries(runs):
        try:
            facts = entry.stat(follow_symlinks=False)
        except OSError:  # removed since the listing
            keyed.append((_start_timestamp(entry.path) or 0.0, entry.name, entry.path))
            continue
        stamp = (facts.st_ino, facts.st_mtime_ns, facts.st_size)
        cached = known.get(entry.name)
        if cached is not None and cached[0] == stamp:
            started = cached[1]
            seen[entry.name] = cached
        else:
            read = _start_timestamp(entry.path)
            if read is not None:
                started = read
                seen[entry.name] = (stamp, read)
            else:
                started = facts.st_mtime
        keyed.append((started, entry.name, entry.path))
    with _start_times_lock:
        _start_times[str(runs)] = seen
        while len(_start_times) > _START_TIMES_DIRS:
            del _start_times[next(iter(_start_times))]
    keyed.sort(reverse=True)
    return [Path(path) for _, _, path in keyed[skip:]]


def _start_timestamp(path: str) -> float | None:
    """The ``run/start`` time on the transcript's first line (``None`` when it is unreadable or not there yet)."""
    try:
        with open_regular(path) as file:
            first = json.loads(file.readline(MAX_RECORD_BYTES))
        return datetime.fromisoformat(first["time"]).timestamp()
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _summary(path: Path) -> RunSummary:
    run_id = path.name[: -len(_SUFFIX)]
    try:
        records = read_records(path)
    except OSError:
        records = []
    start = _first(records, "run/start")
    prompt = _first(records, "prompt")
    end = _first(records, "run/end")
    start_data = _data(start)
    end_data = _data(end)
    duration = end_data.get("duration_ms")
    usage = end_data.get("usage")
    provider = start_data.get("provider")
    cause = end_data.get("cause")
    status = _status(path, records)
    start_time = start.get("time") if start is not None else None
    if status in _IN_PROGRESS:
        duration = _elapsed_ms(start_time)  # a live duration: from run/start until now
    session_id = start_data.get("session_id")
    return RunSummary(
        run_id=run_id,
        start_time=start_time,
        provider=provider if isinstance(provider, str) else None,
        duration_ms=duration if isinstance(duration, int) else None,
        status=status,
        task=prompt_text(_data(prompt).get("content"))[:TASK_PREVIEW_CHARS],
        usage=cast("dict[str, Any]", usage) if isinstance(usage, dict) else None,
        cause=cause if isinstance(cause, str) else None,
        session_id=session_id if isinstance(session_id, str) else None,
    )


def _elapsed_ms(start_time: object) -> int | None:
    if not isinstance(start_time, str):
        return None
    try:
        started = datetime.fromisoformat(start_time)
    except ValueError:
        return None
    return max(0, round((datetime.now(UTC) - started).total_seconds() * 1000))


def prompt_text(content: object) -> str:
    """The concatenated text of a prompt's text blocks."""
    if not isinstance(content, list):
        return ""
    texts: list[str] = []
    for block in cast("list[object]", content):
        if isinstance(block, dict):
            text = cast("dict[str, object]", block).get("text")
            if isinstance(text, str):
                texts.append(text)
    return "".join(texts)


def _status(path: Path, records: list[dict[str, Any]]) -> str:
    end = _first(records, "run/end")
    if end is not None:
        stop_reason = _data(end).get("stop_reason")
        return stop_reason if isinstance(stop_reason, str) else "unknown"
    if not transcript_in_progress(path):
        return "incomplete"
    # In progress: `starting` until the handshake passed (older records, without `handshake`, had none to wait for).
    return "running" if _first(records, "handshake") is not None or _first(records, "chunk") else "starting"


def _first(records: list[dict[str, Any]], record_type: str) -> dict[str, Any] | None:
    return next((record for record in records if record.get("type") == record_type), None)


def _data(record: dict[str, Any] | None) -> dict[str, Any]:
    data = record.get("data") if record is not None else None
    return cast("dict[str, Any]", data) if isinstance(data, dict) else {}


def _locked(path: Path) -> bool:
    """Whether a writer holds the transcript's lock (an empty file is one being created: in progress too)."""
    with _exclusive(path, shared=True) as acquired:
        return not acquired


@contextlib.contextmanager
def _exclusive(path: Path, *, shared: bool = False) -> Generator[bool]:
    """Try the transcript's lock without blocking; yield whether it was acquired (and hold it meanwhile)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO put there since the listing: no wait
    except FileNotFoundError:
        yield True
        return
    try:
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            yield False
            return
        # A file created but not yet holding its first line is a writer between create and lock.
        yield os.fstat(fd).st_size > 0
    finally:
        os.close(fd)
