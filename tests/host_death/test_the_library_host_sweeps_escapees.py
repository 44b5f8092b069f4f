"""A program using ``Host`` leaves nothing behind: a run's escapees are swept at its teardown and at the close.

A grandchild that ``setsid()``-s away from a child that then crashes, or a double-forked daemon whose parent is
long gone, is in neither the child's group nor the teardown's snapshot; the keeper finds it by its run's marker.
The keeper itself is started only by a host that spawns, holds no pipe a child could inherit, and is reaped at
the close (the autouse leak check fails a test that leaves a process or a pipe).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from host import CancelController, Host, load_config
from tests._provider_helpers import is_gone, wait_for_ready_marker, wait_until_gone
from tests.conftest import FAKE_ACP_AGENT
from tests.host_death._helpers import ESCAPEE, SURVIVAL_BOUND_S, acp_entry, wait_for_pid_file, write_config

pytestmark = pytest.mark.anyio

_RUN_TIMEOUT_S = 20


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> Iterator[str]:
    yield request.param


def _setsid_then_crash(tmp_path: Path) -> dict[str, Any]:
    return acp_entry(
        {"MOCK_GRANDCHILD_PID_FILE": str(tmp_path / "pid"), "MOCK_GRANDCHILD_SETSID": "1", "MOCK_CRASH_ON_PROMPT": "1"}
    )


def _double_fork(tmp_path: Path) -> dict[str, Any]:
    entry = acp_entry(
        {"ESCAPEE_MODE": "doublefork", "ESCAPEE_PID_FILE": str(tmp_path / "pid")},
        args=[str(ESCAPEE), str(FAKE_ACP_AGENT)],
    )
    # One-shot: the sweep follows the run's teardown (a session would keep the completed child, and its escapee,
    # warm until the session goes cold).
    entry["session_idle_ms"] = 0
    return entry


async def _delegate(host: Host) -> None:
    await host.execute("delegate_a", {"task": "t"}, signal=CancelController().signal)


@pytest.mark.parametrize("entry_of", [_setsid_then_crash, _double_fork], ids=["setsid-then-crash", "double-fork"])
async def test_no_escapee_survives_the_host_close(tmp_path: Path, entry_of: Any) -> None:
    config = load_config(write_config(tmp_path, entry_of(tmp_path)))
    with anyio.fail_after(_RUN_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            await _delegate(host)
            escapee = await wait_for_pid_file(tmp_path / "pid")
    assert is_gone(escapee)


@pytest.mark.parametrize("entry_of", [_setsid_then_crash, _double_fork], ids=["setsid-then-crash", "double-fork"])
async def test_a_runs_escapee_is_swept_while_the_host_stays_open(tmp_path: Path, entry_of: Any) -> None:
    config = load_config(write_config(tmp_path, entry_of(tmp_path)))
    with anyio.fail_after(_RUN_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            await _delegate(host)
            escapee = await wait_for_pid_file(tmp_path / "pid")
            # SIGTERM-deaf: the keeper's sweep SIGKILLs it after the entry's 300 ms grace.
            with anyio.move_on_after(SURVIVAL_BOUND_S):
                await wait_until_gone(escapee)
            assert is_gone(escapee)


def _keepers() -> list[psutil.Process]:
    return [child for child in psutil.Process().children() if "_keeper_script.py" in " ".join(child.cmdline())]


def _pipe_inodes(pid: int) -> set[str]:
    inodes: set[str] = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("pipe:"):
            inodes.add(target)
    return inodes


async def test_a_host_that_spawns_nothing_starts_no_keeper(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, acp_entry()))
    async with Host.open(config, parent_cwd=str(tmp_path)):
        assert _keepers() == []


async def test_the_keeper_holds_the_only_pipe_end_and_is_reaped_at_the_close(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    config = load_config(write_config(tmp_path, acp_entry({"MOCK_HANG": "1", "MOCK_READY_FILE": str(ready)})))
    seen: list[psutil.Process] = []
    with anyio.fail_after(_RUN_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host, anyio.create_task_group() as group:
            controller = CancelController()

            async def delegate() -> None:
                await host.execute("delegate_a", {"task": "t"}, signal=controller.signal)

            group.start_soon(delegate)
            await wait_for_ready_marker(ready)
            (keeper,) = seen[:] = _keepers()
            keeper_pipe = os.readlink(f"/proc/{keeper.pid}/fd/0")
            children = [child for child in psutil.Process().children() if child.pid != keeper.pid]
            assert children
            for child in children:
                assert keeper_pipe not in _pipe_inodes(child.pid)
            controller.cancel("done")
    assert _keepers() == []
    assert len(seen) == 1 and not seen[0].is_running()
