"""Continuous stderr drain into a bounded tail of the newest non-empty lines (host-only, never model-visible).

The drain reads until EOF so a chatty child never blocks on a full pipe; an unterminated last fragment is
flushed as a line at EOF. Memory stays bounded: at most ``max_lines`` lines of at most 8 KiB each are kept.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Final

import anyio
from anyio.abc import ByteReceiveStream

__all__ = ["StderrTail", "drain_stderr", "tail_bytes"]

logger = logging.getLogger(__name__)

# Bytes kept of one stderr line; the rest of an over-long line is dropped (bounds memory on a newline-free flood).
_MAX_LINE_BYTES: Final = 8 * 1024


def tail_bytes(lines: tuple[str, ...]) -> bytes:
    """A stderr tail as the bytes a run record keeps: each line newline-terminated, UTF-8."""
    return "".join(line + "\n" for line in lines).encode("utf-8")


class StderrTail:
    """A ring of the newest non-empty stderr lines of one child, plus the drain's closed edge."""

    def __init__(self, pid: int, max_lines: int, *, log: logging.Logger | None = None) -> None:
        self._pid = pid
        self._log = log if log is not None else logger
        self._lines: deque[str] = deque(maxlen=max_lines)
        self._pending = bytearray()
        self._truncating = False
        self.closed = anyio.Event()
        """Set once the drain ended (stderr EOF, or the stream was closed)."""

    @property
    def lines(self) -> tuple[str, ...]:
        """The newest non-empty lines, oldest first."""
        return tuple(self._lines)

    def append(self, line: str) -> None:
        """Add a host-made line (e.g. a shutdown failure note) to the tail if it is not blank."""
        if line.strip():
            self._lines.append(line)

    def feed(self, data: bytes) -> None:
        """Split ``data`` into lines, keeping an unterminated rest for the next chunk."""
        *complete, rest = data.split(b"\n")
        for piece in complete:
            self._buffer(piece)
            self._emit()
        self._buffer(rest)

    def finish(self) -> None:
        """Flush the unterminated fragment at EOF."""
        self._emit()

    def _buffer(self, piece: bytes) -> None:
        if self._truncating or not piece:
            return
        room = _MAX_LINE_BYTES - len(self._pending)
        if len(piece) > room:
            piece = piece[:room]
            self._truncating = True
        self._pending += piece

    def _emit(self) -> None:
        line = self._pending.decode("utf-8", errors="replace").rstrip("\r")
        self._pending.clear()
        self._truncating = False
        if line.strip():
            self._lines.append(line)
            self._log.debug("child %d stderr: %s", self._pid, line)


async def drain_stderr(stream: ByteReceiveStream, tail: StderrTail) -> None:
    """Read ``stream`` to EOF into ``tail``; a closed or broken stream ends the drain quietly."""
    try:
        async for chunk in stream:
            tail.feed(chunk)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        pass
    finally:
        tail.finish()
        tail.closed.set()
