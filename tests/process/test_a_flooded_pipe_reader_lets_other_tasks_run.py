"""A child that writes faster than the host reads keeps its stdout pipe full, so every read finds data at once. The
reader must still let the other tasks run between reads: before, it never yielded, and under load a flooding
DSH SDK runtime starved the task awaiting its prompt's response until the notifications queued meanwhile passed
their bound (the run then ended ``output-limit`` with no output instead of timing out with its partial output)."""

from __future__ import annotations

import os

import anyio
import anyio.lowlevel
import pytest

from host.process._spawn import _PipeReceiveStream

pytestmark = pytest.mark.anyio


async def test_a_reader_of_a_pipe_that_always_has_data_yields_between_reads() -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, b"x" * 4096)
    stream = _PipeReceiveStream(os.fdopen(read_end, "rb", buffering=0))
    ticks = 0
    during = 0

    async def count() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await anyio.lowlevel.checkpoint()

    try:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as group:
                group.start_soon(count)
                await anyio.lowlevel.checkpoint()
                before = ticks
                for _ in range(100):
                    assert await stream.receive(16) == b"x" * 16
                during = ticks - before
                group.cancel_scope.cancel()
    finally:
        stream.close()
        os.close(write_end)
    assert during >= 99
