"""The CLI's two output streams, written in order by one pump so that nothing can hold a run.

* stdout is written by a worker thread the pump abandons on cancel: a reader that stops reading never blocks the
  event loop, so signals still tear the child down. A closed or broken stdout is noted (``broken``), reported once
  through ``on_broken``, and never raises.
* When stdout and stderr are the same file or terminal, a stderr line after unterminated stdout text starts on a
  new line: CLI text never shares a line with a log line.
* On a terminal, child text is neutralised (control and escape sequences shown as ``\\xNN``; newline and tab kept),
  and a one-line status is drawn on stderr while nothing else is mid-line.
"""

from __future__ import annotations

import collections
import os
import queue
import threading
from collections.abc import Callable
from typing import Final

import anyio
import anyio.from_thread
import anyio.lowlevel

from host.cli._render import neutralise

__all__ = ["Output", "neutralise"]

_ERASE_LINE: Final = b"\r\x1b[K"
_STDOUT: Final = 1
_STDERR: Final = 2


def _is_tty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _same_file(first: int, second: int) -> bool:
    try:
        a, b = os.fstat(first), os.fstat(second)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class _StdoutWriter:
    """A daemon thread that does the blocking stdout writes; an abandoned write never holds the process's exit."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[bytes, Callable[[OSError | None], None]]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    async def write(self, data: bytes) -> None:
        """Write ``data`` to stdout; cancelling abandons the write (the thread finishes it, or stays blocked).

        Raises:
            OSError: the write failed (EPIPE, EBADF, ...).
        """
        token = anyio.lowlevel.current_token()
        done = anyio.Event()
        failure: list[OSError] = []

        def finished(error: OSError | None) -> None:
            if error is not None:
                failure.append(error)
            done.set()

        def report(error: OSError | None) -> None:
            try:
                anyio.from_thread.run_sync(finished, error, token=token)
            except RuntimeError:
                pass  # the event loop is gone: nobody waits for this write any more

        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name="subagent-host stdout", daemon=True)
            self._thread.start()
        self._jobs.put((data, report))
        await done.wait()
        if failure:
            raise failure[0]

    def _serve(self) -> None:
        while True:
            data, report = self._jobs.get()
            try:
                _write_all(_STDOUT, data)
            except OSError as exc:
                report(exc)
            else:
                report(None)


class Output:
    """Ordered, non-blocking-for-the-loop writes to stdout and stderr; direct writes before ``pump`` runs."""

    def __init__(self) -> None:
        """Inspect the two streams (call inside the event loop: the pump's events are anyio events)."""
        self.stdout_tty = _is_tty(_STDOUT)
        self.stderr_tty = _is_tty(_STDERR)
        self._shared = _same_file(_STDOUT, _STDERR)
        self._items: collections.deque[tuple[int, bytes, bool]] = collections.deque()
        self._wake = anyio.Event()
        self._idle = anyio.Event()
        self._idle.set()
        self._pumping = False
        self._writer = _StdoutWriter()
        self._stdout_mid_line = False
        self._stderr_mid_line = False
        self._status: bytes | None = None
        self._status_shown = False
        self.broken = False
        """stdout was closed or broken (exit 141)."""
        self.on_broken: Callable[[], None] | None = None

    # -- what the commands call ----------------------------------------------------------------------------

    def child_text(self, text: str) -> None:
        """Child-controlled text for stdout (neutralised on a terminal)."""
        self.out(neutralise(text) if self.stdout_tty else text)

    def out(self, text: str) -> None:
        """CLI text for stdout."""
        self._put(_STDOUT, text.encode("utf-8", "backslashreplace"))

    def err(self, text: str) -> None:
        """CLI text for stderr (one or more whole lines; an open ``detail`` line is ended first)."""
        self._put(_STDERR, text.encode("utf-8", "backslashreplace"))

    def detail(self, text: str) -> None:
        """Already-neutralised live detail for stderr that may end mid-line and be continued by the next call."""
        self._put(_STDERR, text.encode("utf-8", "backslashreplace"), continues=True)

    def status(self, line: str | None) -> None:
        """Show (or with ``None`` clear) the one-line status on a stderr terminal; a no-op elsewhere."""
        if not self.stderr_tty:
            return
        self._status = None if line is None else neutralise(line).encode("utf-8", "backslashreplace")
        self._put(_STDERR, b"")

    async def pump(self) -> None:
        """Write queued items in order until cancelled (run it in the command's task group)."""
        self._pumping = True
        try:
            while True:
                await self._wake.wait()
                self._wake = anyio.Event()
                while self._items:
                    fd, data, continues = self._items.popleft()
                    await self._emit(fd, data, continues)
                self._idle.set()
        finally:
            self._pumping = False

    async def drain(self) -> None:
        """Wait until everything queued so far was written (or stdout broke)."""
        while self._items or not self._idle.is_set():
            await self._idle.wait()

    def finish(self) -> None:
        """Clear the status line and write what is left directly (after the pump stopped; never blocks on stdout
        that is broken)."""
        self._status = None
        self._put(_STDERR, b"")

    # -- the ordered writer ------------------------------------------------------------------------------------

    def _put(self, fd: int, data: bytes, *, continues: bool = False) -> None:
        if not self._pumping:
            self._sync_emit(fd, data, continues)
            return
        self._items.append((fd, data, continues))
        self._idle = anyio.Event() if self._idle.is_set() else self._idle
        self._wake.set()

    def _plan(self, fd: int, data: bytes, continues: bool = False) -> list[tuple[int, bytes]]:
        """The writes for one item: erase the status, break an unterminated line, write, redraw."""
        writes: list[tuple[int, bytes]] = []
        if self._status_shown and (fd == _STDERR or self._shared or self.stdout_tty):
            writes.append((_STDERR, _ERASE_LINE))
            self._status_shown = False
        if data:
            if fd == _STDERR and self._shared and self._stdout_mid_line:
                writes.append((_STDERR, b"\n"))
                self._stdout_mid_line = False
            if self._stderr_mid_line and ((fd == _STDERR and not continues) or (fd == _STDOUT and self._shared)):
                writes.append((_STDERR, b"\n"))
                self._stderr_mid_line = False
            writes.append((fd, data))
            if fd == _STDOUT:
                self._stdout_mid_line = not data.endswith(b"\n")
            else:
                self._stderr_mid_line = not data.endswith(b"\n")
        if self._status is not None and not self._stdout_mid_line and not self._stderr_mid_line:
            writes.append((_STDERR, _ERASE_LINE + self._status))
            self._status_shown = True
        return writes

    async def _emit(self, fd: int, data: bytes, continues: bool) -> None:
        for target, chunk in self._plan(fd, data, continues):
            if target == _STDOUT:
                if self.broken:
                    continue
                try:
                    await self._writer.write(chunk)
                except OSError as exc:
                    self._note_broken(exc)
            else:
                self._stderr(chunk)

    def _sync_emit(self, fd: int, data: bytes, continues: bool) -> None:
        for target, chunk in self._plan(fd, data, continues):
            if target == _STDOUT:
                if self.broken:
                    continue
                try:
                    _write_all(target, chunk)
                except OSError as exc:
                    self._note_broken(exc)
            else:
                self._stderr(chunk)

    @staticmethod
    def _stderr(chunk: bytes) -> None:
        try:
            _write_all(_STDERR, chunk)
        except OSError:
            pass  # nowhere left to report a failure to report

    def _note_broken(self, exc: OSError) -> None:
        # EPIPE (the reader is gone), EBADF (stdout was closed), anything else: stdout is unusable either way.
        del exc
        self.broken = True
        if self.on_broken is not None:
            self.on_broken()
