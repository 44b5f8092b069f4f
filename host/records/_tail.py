"""``TranscriptTail``: read a transcript while its writer appends to it, one whole record at a time.

The writer appends complete lines, but a reader may meet a line half written (a large line reaches the kernel in
several writes). The tail hands out only newline-terminated records and keeps the unterminated rest for the next
read. Memory is bounded: each read takes at most ``READ_BATCH_BYTES`` from the file, and a line longer than
``MAX_RECORD_BYTES`` is skipped (counted in ``skipped_bytes``) instead of buffered. A line that is not a JSON object
is skipped too. The file is read through one descriptor opened at the start, so pruning cannot take it away.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Final, cast

from host._files import open_regular_fd
from host.records._store import MAX_RECORD_BYTES, transcript_in_progress

__all__ = ["MAX_RECORD_BYTES", "READ_BATCH_BYTES", "TranscriptTail"]

READ_BATCH_BYTES: Final = 1 << 20
"""The most one ``read_records`` call takes from the file (the rest waits for the next call)."""
_CHUNK_BYTES: Final = 64 << 10


class TranscriptTail:
    """The records appended to one transcript since the last read.

    Args:
        path: the ``<run_id>.jsonl`` to follow.
        max_record_bytes: the longest line buffered (``MAX_RECORD_BYTES``); a longer one is skipped.

    Raises:
        OSError: the file cannot be opened, or it is not a regular file (``host._files.open_regular_fd``).
    """

    def __init__(self, path: Path, *, max_record_bytes: int = MAX_RECORD_BYTES) -> None:
        self._path = path
        self._max_record_bytes = max_record_bytes
        self._fd: int | None = open_regular_fd(path)
        self._partial = bytearray()
        self._skipping = False
        self._drained = False
        self.skipped_bytes = 0
        """Bytes of over-long or unparsable lines skipped so far."""

    @property
    def mid_line(self) -> bool:
        """Whether the last bytes read end inside an unterminated line."""
        return bool(self._partial) or self._skipping

    @property
    def drained(self) -> bool:
        """Whether the last ``read_records`` reached the end of the file (else more is waiting: a line longer than
        ``READ_BATCH_BYTES`` takes several calls, each returning no record until its end is read)."""
        return self._drained

    def read_records(self) -> list[dict[str, Any]]:
        """The complete records appended since the last call (at most ``READ_BATCH_BYTES`` read), in order."""
        assert self._fd is not None, "read after close"
        records: list[dict[str, Any]] = []
        budget = READ_BATCH_BYTES
        self._drained = False
        while budget > 0:
            data = os.read(self._fd, min(_CHUNK_BYTES, budget))
            if not data:
                self._drained = True
                break
            budget -= len(data)
            self._take(data, records)
        return records

    def writer_alive(self) -> bool:
        """Whether the run's writer still holds the transcript's lock (the run is in progress)."""
        return transcript_in_progress(self._path)

    def close(self) -> None:
        """Close the descriptor; idempotent."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def _take(self, data: bytes, records: list[dict[str, Any]]) -> None:
        start = 0
        while start < len(data):
            newline = data.find(b"\n", start)
            end = len(data) if newline < 0 else newline
            piece = data[start:end]
            if self._skipping:
                self.skipped_bytes += len(piece)
            elif len(self._partial) + len(piece) > self._max_record_bytes:
                self.skipped_bytes += len(self._partial) + len(piece)
                self._partial.clear()
                self._skipping = True
            else:
                self._partial += piece
            if newline < 0:
                return
            if self._skipping:
                self._skipping = False
            else:
                record = self._parse(bytes(self._partial))
                if record is not None:
                    records.append(record)
            self._partial.clear()
            start = newline + 1

    def _parse(self, line: bytes) -> dict[str, Any] | None:
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict):
            self.skipped_bytes += len(line)
            return None
        return cast("dict[str, Any]", record)
