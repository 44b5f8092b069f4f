"""One run's files: ``<run_id>.jsonl``, appended a whole line per ``write``, and the ``<run_id>.stderr`` tail.

The writer holds an exclusive ``flock`` on its ``.jsonl`` from creation until ``close``: that lock is what "in
progress" means to ``runs list`` and ``runs prune``. A line reaches the kernel in one ``write`` of the complete,
newline-terminated line, so a host killed at any instant leaves only whole lines behind.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

from host.records._paths import create_private_file, ensure_runs_dir

__all__ = [
    "STDERR_TAIL_BYTES",
    "TranscriptWriter",
    "encode_line",
    "jsonl_path",
    "stderr_path",
    "write_run_records",
]

logger = logging.getLogger(__name__)

STDERR_TAIL_BYTES: Final = 64 * 1024
"""How many of the child's last stderr bytes ``<run_id>.stderr`` keeps."""


def jsonl_path(runs: Path, run_id: str) -> Path:
    """The transcript file of ``run_id``."""
    return runs / f"{run_id}.jsonl"


def stderr_path(runs: Path, run_id: str) -> Path:
    """The stderr tail file of ``run_id``."""
    return runs / f"{run_id}.stderr"


def encode_line(obj: dict[str, Any], *, ascii_only: bool = False) -> str:
    """One compact JSON object and a newline; ASCII escapes only when the text holds lone surrogates, or for
    ``ascii_only`` (a terminal: C1 controls in child text must not reach it raw)."""
    line = json.dumps(obj, ensure_ascii=ascii_only, separators=(",", ":"))
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        # A child may stream half of a surrogate pair; `\udxxx` escapes keep the line valid UTF-8 and lossless.
        line = json.dumps(obj, ensure_ascii=True, separators=(",", ":"))
    return line + "\n"


class TranscriptWriter:
    """The open transcript of one run; create it with ``TranscriptWriter.create``.

    Args:
        runs: the runs directory.
        run_id: the run's id (the file stem).
        fd: the exclusively created, locked, appending descriptor.
    """

    def __init__(self, runs: Path, run_id: str, fd: int) -> None:
        self._runs = runs
        self._run_id = run_id
        self._fd: int | None = fd

    @classmethod
    def create(cls, runs: Path, run_id: str) -> TranscriptWriter:
        """Create ``<run_id>.jsonl`` (0600, exclusive) and take its lock.

        Raises:
            OSError: the file exists or could not be created.
        """
        fd = create_private_file(jsonl_path(runs, run_id))
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise
        return cls(runs, run_id, fd)

    def write(self, line: str) -> None:
        """Append one complete line.

        Raises:
            OSError: the write failed (the disk is full, ...).
        """
        assert self._fd is not None, "write after close"
        data = memoryview(line.encode("utf-8"))
        while data:
            written = os.write(self._fd, data)
            data = data[written:]

    def write_stderr(self, tail: bytes) -> None:
        """Write the last ``STDERR_TAIL_BYTES`` of ``tail`` to ``<run_id>.stderr`` (0600); nothing when empty.

        Raises:
            OSError: the file exists or could not be written.
        """
        tail = tail[-STDERR_TAIL_BYTES:]
        if not tail:
            return
        fd = create_private_file(stderr_path(self._runs, self._run_id))
        try:
            data = memoryview(tail)
            while data:
                data = data[os.write(fd, data) :]
        finally:
            os.close(fd)

    def close(self) -> None:
        """Release the lock and close the file; idempotent."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def write_run_records(state_dir: Path, records: Iterable[tuple[str, dict[str, Any]]]) -> None:
    """Write records observed elsewhere (``on_record`` in a remote worker) as transcripts under ``state_dir/runs/``.

    ``records`` are ``(run_id, record)`` pairs in emission order, several runs possibly interleaved; each run gets
    its own file, created exclusively like a live run's. A failed write is logged and skips that run's file: it
    never fails the caller (as a live run's recording never fails the run).
    """
    by_run: dict[str, list[dict[str, Any]]] = {}
    for run_id, record in records:
        by_run.setdefault(run_id, []).append(record)
    try:
        runs = ensure_runs_dir(state_dir)
    except OSError as exc:
        logger.warning("subagent-host: writing run records failed: %s", exc.strerror or type(exc).__name__)
        return
    for run_id, lines in by_run.items():
        try:
            writer = TranscriptWriter.create(runs, run_id)
        except OSError as exc:
            logger.warning("subagent-host: writing the records of run %s failed: %s", run_id, exc.strerror)
            continue
        try:
            writer.write("".join(encode_line(record) for record in lines))
        except OSError as exc:
            logger.warning("subagent-host: writing the records of run %s failed: %s", run_id, exc.strerror)
        finally:
            writer.close()
