"""The direct child's exit is observed from the backend's exit event, on asyncio and on trio.

The wait never depends on the child's pipes (a grandchild may hold stdout open), and every descriptor the wait
or the child used is closed once the handle is released.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from host.process import ManagedProcess, ProcessOutcome, build_child_env, run_teardown_ladder, spawn_managed
from tests.conftest import PYTHON

CHILDREN = Path(__file__).parent / "children"
COLD_START_S = 10
pytestmark = pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@asynccontextmanager
async def managed(script: str) -> AsyncGenerator[ManagedProcess]:
    async with anyio.create_task_group() as tg:
        handle = await spawn_managed(
            [PYTHON, str(CHILDREN / script)], cwd=str(CHILDREN), env=build_child_env({}), task_group=tg, grace_ms=300
        )
        try:
            yield handle
        finally:
            await run_teardown_ladder(handle, eof_grace_ms=100, aggregate_message="teardown failed")


@pytest.mark.anyio
async def test_the_exit_is_observed_while_a_grandchild_holds_stdout() -> None:
    async with managed("setsid_grandchild.py") as handle:
        with anyio.fail_after(COLD_START_S):
            line = await BufferedByteReceiveStream(handle.stdout).receive_until(b"\n", 4096)
        assert line.startswith(b"grandchild ")
        handle.snapshot_descendants()  # the grandchild setsid()-ed out of the group: the ladder must still find it
        await handle.close_stdin()
        with anyio.fail_after(COLD_START_S):
            assert await handle.wait_outcome() == ProcessOutcome(exit_code=0, signal=None)
        assert handle.outcome == ProcessOutcome(exit_code=0, signal=None)
        # The grandchild still holds stdout: the tree is not gone, and the exit facts did not wait for it.
        assert not handle.tree_gone()


@pytest.mark.anyio
async def test_an_exit_by_signal_is_reaped_once_with_its_signal_name() -> None:
    async with managed("eof_deaf.py") as handle:
        os.kill(handle.pid, 9)
        with anyio.fail_after(COLD_START_S):
            outcome = await handle.wait_outcome()
        assert outcome == ProcessOutcome(exit_code=None, signal="SIGKILL")
        assert await handle.wait_outcome() is outcome


@pytest.mark.anyio
async def test_every_descriptor_is_closed_after_each_run() -> None:
    before = open_fds()
    for _ in range(3):
        async with managed("exit_on_eof.py") as handle:
            with anyio.fail_after(COLD_START_S):
                await handle.close_stdin()
                await handle.wait_outcome()
        await handle.aclose()
    assert open_fds() - before == set()
