"""Spawn a child off the event loop: ``subprocess.Popen`` in a worker thread, non-blocking pipes, pidfd exit.

Why not ``anyio.open_process``: on asyncio (Python 3.11) it runs ``fork_exec`` on the event-loop thread, where
``vfork`` suspends the whole loop until the child has exec'd (2-20 ms on a loaded machine, every other run
stalled behind it), and its ``ThreadedChildWatcher`` starts one ``waitpid`` thread per child. Here the fork runs
in anyio's worker thread, so concurrent runs spawn in parallel, and the exit is awaited on a Linux pidfd
(``pidfd_open`` plus a readability wait, as anyio's trio backend does), polling ``waitpid(WNOHANG)`` where pidfds
are unavailable. Nothing else reaps the child: :meth:`PipeProcess.returncode` reaps it once it exited.

Ownership across the thread hop: the worker thread is never abandoned (``to_thread.run_sync`` shields the wait),
so a cancellation delivered during the spawn takes effect only once the ``Popen`` is back in the caller's hands,
and the caller's next steps before any await make it owned (see :func:`host.process.spawn_managed`).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from typing import IO, Final

import anyio
import anyio.lowlevel
import anyio.to_thread
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from host.process._poll import poll_until

__all__ = ["PipeProcess", "open_pipe_process"]

# Most bytes one receive() returns (anyio's default).
_RECEIVE_MAX: Final = 65536


class _NonBlockingPipe:
    """One end of a pipe, set non-blocking; owns its descriptor (closed by :meth:`close`)."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self._pipe = pipe
        self.fd: Final = pipe.fileno()
        os.set_blocking(self.fd, False)
        self.closed = False

    def close(self) -> None:
        """Close the descriptor now (a task waiting on it is woken with ``ClosedResourceError``); idempotent."""
        if not self.closed:
            self.closed = True
            anyio.notify_closing(self.fd)
            self._pipe.close()


class _PipeReceiveStream(ByteReceiveStream):
    """The read end of a non-blocking pipe. A read that finds data at once does not yield to the loop, but the next
    receive after it does (before reading, so a cancel there loses nothing): a child that writes faster than the
    host reads keeps the pipe full, and a reader that never yielded would starve every other task (timers, the
    task awaiting the response it just read) for as long as the flood lasts."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self._end = _NonBlockingPipe(pipe)
        self._waited = True
        """Whether the last receive waited for its data (then this one need not yield first)."""

    async def receive(self, max_bytes: int = _RECEIVE_MAX) -> bytes:
        end = self._end
        if not self._waited:
            await anyio.lowlevel.checkpoint()
        waited = False
        while True:
            if end.closed:
                raise anyio.ClosedResourceError
            try:
                data = os.read(end.fd, max_bytes)
            except BlockingIOError:
                waited = True
                await anyio.wait_readable(end.fd)
                continue
            if not data:
                raise anyio.EndOfStream
            self._waited = waited
            return data

    def close(self) -> None:
        """Close the pipe now (a waiting ``receive`` is woken with ``ClosedResourceError``); idempotent."""
        self._end.close()

    async def aclose(self) -> None:
        self._end.close()
        await anyio.lowlevel.checkpoint()


class _PipeSendStream(ByteSendStream):
    """The write end of a non-blocking pipe."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self._end = _NonBlockingPipe(pipe)

    async def send(self, item: bytes) -> None:
        """Write all of ``item``; yields to the loop only while the pipe is full (every caller awaits the child's
        answer next, so a send that fits in the pipe needs no scheduling point of its own)."""
        await anyio.lowlevel.checkpoint_if_cancelled()
        end = self._end
        view = memoryview(item)
        while view:
            if end.closed:
                raise anyio.ClosedResourceError
            try:
                view = view[os.write(end.fd, view) :]
            except BlockingIOError:
                await anyio.wait_writable(end.fd)
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise anyio.BrokenResourceError from exc

    def close(self) -> None:
        """Close the pipe now (the child reads EOF); idempotent."""
        self._end.close()

    async def aclose(self) -> None:
        self._end.close()
        await anyio.lowlevel.checkpoint()


class PipeProcess(Process):
    """A ``Popen`` child with anyio pipe streams; exit awaited on a pidfd (or polled)."""

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        self._popen = popen
        self._stdin = _PipeSendStream(popen.stdin) if popen.stdin is not None else None
        self._stdout = _PipeReceiveStream(popen.stdout) if popen.stdout is not None else None
        self._stderr = _PipeReceiveStream(popen.stderr) if popen.stderr is not None else None

    async def aclose(self) -> None:
        for stream in (self._stdin, self._stdout, self._stderr):
            if stream is not None:
                stream.close()  # synchronous: no cancel can come between the closes
        try:
            await self.wait()
        except BaseException:
            self.kill()
            with anyio.CancelScope(shield=True):
                await self.wait()
            raise

    async def wait(self) -> int:
        returncode = self.returncode
        if returncode is not None:
            await anyio.lowlevel.checkpoint()
            return returncode
        try:
            pidfd = os.pidfd_open(self._popen.pid)
        except (AttributeError, OSError):  # no pidfds here: poll waitpid(WNOHANG)
            await poll_until(lambda: self.returncode is not None)
        else:
            try:
                while self.returncode is None:
                    await anyio.wait_readable(pidfd)
            finally:
                anyio.notify_closing(pidfd)
                os.close(pidfd)
        returncode = self.returncode
        assert returncode is not None
        return returncode

    def terminate(self) -> None:
        self._popen.terminate()

    def kill(self) -> None:
        self._popen.kill()

    def send_signal(self, signal: int) -> None:
        self._popen.send_signal(signal)

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        """The exit status once the child exited (reaping it; ``waitpid(WNOHANG)``, never blocking)."""
        return self._popen.poll()

    @property
    def stdin(self) -> ByteSendStream | None:
        return self._stdin

    @property
    def stdout(self) -> ByteReceiveStream | None:
        return self._stdout

    @property
    def stderr(self) -> ByteReceiveStream | None:
        return self._stderr


def _popen(argv: list[str], cwd: str, env: dict[str, str], capture_stderr: bool) -> subprocess.Popen[bytes]:
    # bufsize=0: the pipes are raw FileIO objects, read and written through their descriptors only.
    return subprocess.Popen(
        argv,
        bufsize=0,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if capture_stderr else None,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )


async def open_pipe_process(
    argv: Sequence[str], *, cwd: str, env: Mapping[str, str], capture_stderr: bool
) -> PipeProcess:
    """Spawn ``argv`` in a new session from a worker thread, with stdin/stdout (and stderr) pipes.

    Raises:
        OSError: The child could not be spawned, unchanged.
    """
    popen = await anyio.to_thread.run_sync(_popen, list(argv), cwd, dict(env), capture_stderr)
    # No await between here and the caller: the thread is never abandoned, so the Popen always arrives.
    return PipeProcess(popen)
