"""An in-process fake of a managed child (as the MCP SDK's stdio tests use a ``FakeProcess``), for pure logic.

``FakeProcess`` satisfies ``ProcessHandle`` over memory pipes: the test plays the child through ``child_stdin``
(what the host wrote) and ``child_stdout`` (what the child writes), decides when it exits, and reads back the
order of every teardown rung in ``calls``. Operating-system facts stay with the real fake runtimes.
"""

from __future__ import annotations

import signal

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from host._exceptions import ProcessTreeSurvivedError
from host.process import ProcessHandle, ProcessOutcome
from tests.jsonrpc._helpers import MemoryByteReceiveStream, MemoryByteSendStream


class FakeProcess(ProcessHandle):
    """A scripted child: exits on stdin EOF and/or SIGTERM as configured, or when the test calls ``exit``."""

    def __init__(self, *, exits_on_eof: bool = True, exits_on_terminate: bool = True, pid: int = 4242) -> None:
        to_child_send, self.child_stdin = anyio.create_memory_object_stream[bytes](64)
        self.child_stdout, from_child_receive = anyio.create_memory_object_stream[bytes](64)
        self._stdin = MemoryByteSendStream(to_child_send)
        self._stdout = MemoryByteReceiveStream(from_child_receive)
        self._pid = pid
        self._exits_on_eof = exits_on_eof
        self._exits_on_terminate = exits_on_terminate
        self._outcome: ProcessOutcome | None = None
        self._exited = anyio.Event()
        self.calls: list[str] = []

    @property
    def pid(self) -> int:
        return self._pid

    @property
    def stdin(self) -> ByteSendStream:
        return self._stdin

    @property
    def stdout(self) -> ByteReceiveStream:
        return self._stdout

    @property
    def outcome(self) -> ProcessOutcome | None:
        return self._outcome

    def exit(self, returncode: int = 0) -> None:
        """The child exits now (its stdout stays open, as if a descendant held it)."""
        if self._outcome is None:
            self._outcome = ProcessOutcome.from_returncode(returncode)
            self._exited.set()

    async def wait_outcome(self) -> ProcessOutcome:
        await self._exited.wait()
        assert self._outcome is not None
        return self._outcome

    async def wait_exit(self, bound_ms: float) -> bool:
        self.calls.append("wait_exit")
        with anyio.move_on_after(bound_ms / 1000):
            await self._exited.wait()
        return self._exited.is_set()

    async def terminate(self) -> None:
        self.calls.append("terminate")
        if self._exits_on_terminate:
            self.exit(-signal.SIGTERM)

    async def wait_reaped(self) -> None:
        self.calls.append("wait_reaped")
        if not self._exited.is_set():
            raise ProcessTreeSurvivedError(f"process tree of pid {self._pid} still alive")

    async def close_stdin(self) -> None:
        self.calls.append("close_stdin")
        await self._stdin.aclose()
        if self._exits_on_eof:
            self.exit(0)

    def snapshot_descendants(self) -> None:
        self.calls.append("snapshot_descendants")

    def tree_gone(self) -> bool:
        return self._exited.is_set()

    async def aclose(self) -> None:
        self.calls.append("aclose")
        await self._stdin.aclose()
        await self._stdout.aclose()
        self.child_stdin.close()
        self.child_stdout.close()
