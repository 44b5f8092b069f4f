"""``results.jsonl``: the batch's append-only result file, one whole line per finished item.

Each line reaches the kernel in one ``write`` of the complete, newline-terminated line, so a batch killed at any
instant leaves only whole lines. Opening the file cuts a torn last line (a write cut short by a kill mid-way)
back to the last newline, so resume never reads or appends after half a line. The file is private (0600) and the
driver is its only writer (an exclusive ``flock`` while it is open: a second batch on the same directory fails).
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from host._files import open_regular, open_regular_fd
from host.records import encode_line

__all__ = ["RESULTS_FILE_NAME", "RESULT_SCHEMA", "DoneItem", "ResultsFile", "ResultsLockedError"]

RESULTS_FILE_NAME: Final = "results.jsonl"
RESULT_SCHEMA: Final = 1
"""The ``schema`` member of every result line."""
_OPEN_FLAGS: Final = os.O_RDWR | os.O_APPEND | os.O_CREAT
"""Through ``open_regular_fd``: never through a symlink, never waiting on a FIFO (refused: not a regular file)."""
_FILE_MODE: Final = 0o600
_READ_SIZE: Final = 1 << 16


class ResultsLockedError(Exception):
    """Another batch holds ``results.jsonl`` of this directory open."""


@dataclass(frozen=True, slots=True)
class DoneItem:
    """What the summary keeps of one result line (never its output)."""

    stop_reason: str
    duration_ms: float
    diagnostic: str | None
    error_code: str | None


class ResultsFile:
    """The open ``results.jsonl`` of one batch directory; open it with ``ResultsFile.open``."""

    def __init__(self, path: Path, fd: int) -> None:
        self._path = path
        self._fd: int | None = fd

    @classmethod
    def open(cls, outdir: Path) -> ResultsFile:
        """Open (or create) ``outdir/results.jsonl`` for appending, make it 0600, lock it and cut a torn last line.

        Raises:
            ResultsLockedError: another batch has it open.
            NotRegularFileError: it is a symlink, a FIFO or anything else but a regular file (never followed or
                waited on).
            OSError: it cannot be created or opened.
        """
        path = outdir / RESULTS_FILE_NAME
        fd = open_regular_fd(path, flags=_OPEN_FLAGS, mode=_FILE_MODE, name=RESULTS_FILE_NAME)
        try:
            os.set_blocking(fd, True)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ResultsLockedError(f"{path} is in use by another batch") from None
        except OSError:
            os.close(fd)
            raise
        try:
            os.fchmod(fd, _FILE_MODE)  # a file of an earlier batch, or one the operator made, becomes private too
            _cut_torn_tail(fd)
        except OSError:
            os.close(fd)
            raise
        return cls(path, fd)

    @property
    def path(self) -> Path:
        """Where the file is."""
        return self._path

    def done(self) -> dict[str, DoneItem]:
        """Every id with a result line, the last line of an id winning (``--redo-existing`` appends another).

        Lines that are not result objects (edited by hand) are ignored: they name no finished item.
        """
        done: dict[str, DoneItem] = {}
        for line in _lines(self._path):
            try:
                obj = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(obj, dict):
                parsed = _done_item(obj)  # pyright: ignore[reportUnknownArgumentType]
                if parsed is not None:
                    done[parsed[0]] = parsed[1]
        return done

    def append(self, line: dict[str, Any]) -> None:
        """Append one result object as one whole line.

        Raises:
            OSError: the write failed (the disk is full, ...).
        """
        assert self._fd is not None, "append after close"
        data = memoryview(encode_line(line).encode("utf-8"))
        while data:
            data = data[os.write(self._fd, data) :]

    def close(self) -> None:
        """Release the lock and close the file; idempotent."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def _cut_torn_tail(fd: int) -> None:
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    end = size
    while end > 0:
        start = max(0, end - _READ_SIZE)
        chunk = os.pread(fd, end - start, start)
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            os.ftruncate(fd, start + newline + 1)
            return
        end = start
    os.ftruncate(fd, 0)


def _lines(path: Path) -> Iterator[bytes]:
    with open_regular(path) as file:
        yield from file


def _done_item(obj: dict[str, Any]) -> tuple[str, DoneItem] | None:
    item_id, stop_reason, duration = obj.get("id"), obj.get("stop_reason"), obj.get("duration_ms")
    if not isinstance(item_id, str) or not isinstance(stop_reason, str):
        return None
    diagnostic, error_code = obj.get("diagnostic"), obj.get("error_code")
    return item_id, DoneItem(
        stop_reason=stop_reason,
        duration_ms=float(duration) if isinstance(duration, int | float) and not isinstance(duration, bool) else 0.0,
        diagnostic=diagnostic if isinstance(diagnostic, str) else None,
        error_code=error_code if isinstance(error_code, str) else None,
    )
