"""The /proc walk behind the tree snapshot finds every attached descendant, in or out of the group."""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import psutil
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from host.process import ManagedProcess, build_child_env, run_teardown_ladder, spawn_managed
from host.process._tree import descendant_pids
from tests._provider_helpers import is_gone
from tests.conftest import PYTHON

CHILDREN = Path(__file__).parent / "children"
COLD_START_S = 10
pytestmark = pytest.mark.skipif(descendant_pids(os.getpid()) is None, reason="needs /proc/<pid>/task/*/children")


@asynccontextmanager
async def descendants_child() -> AsyncGenerator[tuple[ManagedProcess, dict[str, int]]]:
    async with anyio.create_task_group() as tg:
        handle = await spawn_managed(
            [PYTHON, str(CHILDREN / "descendants.py")],
            cwd=str(CHILDREN),
            env=build_child_env({}),
            task_group=tg,
            grace_ms=500,
        )
        try:
            with anyio.fail_after(COLD_START_S):
                line = await BufferedByteReceiveStream(handle.stdout).receive_until(b"\n", 4096)
            pids = {name: int(pid) for name, pid in (field.split("=") for field in line.decode().split())}
            yield handle, pids
        finally:
            await run_teardown_ladder(handle, eof_grace_ms=200, aggregate_message="teardown failed")


@pytest.mark.anyio
async def test_the_walk_finds_setsid_escapees_double_fork_descendants_and_thread_children() -> None:
    async with descendants_child() as (handle, pids):
        found = descendant_pids(handle.pid)
        assert found is not None
        assert set(pids.values()) <= set(found)
        # The same set psutil's whole-machine scan finds, parents before their children.
        scanned = {child.pid for child in psutil.Process(handle.pid).children(recursive=True)}
        assert set(found) == scanned
        assert found.index(pids["middle"]) < found.index(pids["deep"])


@pytest.mark.anyio
async def test_the_snapshot_holds_escapees_so_the_ladder_kills_them_after_the_leader_exited() -> None:
    async with descendants_child() as (_, pids):
        pass
    for pid in pids.values():
        assert is_gone(pid), pid


def test_a_walk_from_a_pid_that_does_not_exist_finds_nothing() -> None:
    # pid_max is at most 2**22 on Linux, so this pid can never exist.
    assert descendant_pids(2**22 + 1) == []
