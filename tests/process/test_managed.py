from __future__ import annotations

import os
import stat
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from host.process import ManagedProcess, ProcessOutcome, build_child_env, run_teardown_ladder, spawn_managed
from tests._provider_helpers import is_gone
from tests.conftest import PYTHON

CHILDREN = Path(__file__).parent / "children"
GRACE_MS = 200
# Bound for waits that include a real interpreter cold start (slow on a loaded 2-core runner).
COLD_START_S = 10
ACP_TEARDOWN_FAILED = "ACP subprocess teardown failed"
# Numbered lines written by children/stderr_flood.py.
FLOOD_LINES = 10 * 1024 * 1024 // 32


@asynccontextmanager
async def managed_child(script: str, *, capture_stderr: bool = False) -> AsyncGenerator[ManagedProcess]:
    """Spawn a child script; always run a (fast) ladder afterwards so a failing test leaves nothing behind."""
    async with anyio.create_task_group() as tg:
        handle = await spawn_managed(
            [PYTHON, str(CHILDREN / script)],
            cwd=str(CHILDREN),
            env=build_child_env({}),
            task_group=tg,
            grace_ms=GRACE_MS,
            capture_stderr=capture_stderr,
        )
        try:
            yield handle
        finally:
            await run_teardown_ladder(handle, eof_grace_ms=50, aggregate_message=ACP_TEARDOWN_FAILED)


async def read_line(handle: ManagedProcess) -> str:
    line = await BufferedByteReceiveStream(handle.stdout).receive_until(b"\n", 4096)
    return line.decode()


@pytest.mark.anyio
async def test_child_that_exits_on_eof_ends_at_the_eof_rung_with_exit_code_zero() -> None:
    async with managed_child("exit_on_eof.py") as handle:
        assert handle.outcome is None
        with anyio.fail_after(COLD_START_S):
            await run_teardown_ladder(handle, eof_grace_ms=5000, aggregate_message=ACP_TEARDOWN_FAILED)
        assert handle.outcome == ProcessOutcome(exit_code=0, signal=None)
        assert handle.tree_gone()


@pytest.mark.anyio
async def test_eof_deaf_child_ends_at_the_sigterm_rung() -> None:
    async with managed_child("eof_deaf.py") as handle:
        with anyio.fail_after(COLD_START_S):
            await run_teardown_ladder(handle, eof_grace_ms=100, aggregate_message=ACP_TEARDOWN_FAILED)
        assert handle.outcome == ProcessOutcome(exit_code=None, signal="SIGTERM")


@pytest.mark.anyio
async def test_sigterm_trapping_child_ends_at_the_sigkill_rung() -> None:
    async with managed_child("sigterm_trap.py") as handle:
        with anyio.fail_after(COLD_START_S):
            assert await read_line(handle) == "armed"
        with anyio.fail_after(5):
            await run_teardown_ladder(handle, eof_grace_ms=50, aggregate_message=ACP_TEARDOWN_FAILED)
        assert handle.outcome == ProcessOutcome(exit_code=None, signal="SIGKILL")


@pytest.mark.anyio
async def test_setsid_grandchild_that_ignores_sigterm_is_killed_with_the_tree() -> None:
    async with managed_child("setsid_grandchild.py") as handle:
        with anyio.fail_after(COLD_START_S):
            words = (await read_line(handle)).split()
        assert words[0] == "grandchild" and words[2] == "armed"
        grandchild = int(words[1])
        assert os.getpgid(grandchild) != handle.pid
        with anyio.fail_after(5):
            await run_teardown_ladder(handle, eof_grace_ms=100, aggregate_message=ACP_TEARDOWN_FAILED)
        # The child itself exited on EOF although the grandchild still held its stdout open.
        assert handle.outcome == ProcessOutcome(exit_code=0, signal=None)
        assert is_gone(grandchild)


@pytest.mark.anyio
async def test_group_left_holding_only_zombies_counts_as_exited() -> None:
    async with managed_child("zombie_leaver.py") as handle:
        with anyio.fail_after(COLD_START_S):
            assert await read_line(handle) == "forked"
            await run_teardown_ladder(handle, eof_grace_ms=5000, aggregate_message=ACP_TEARDOWN_FAILED)
        assert handle.outcome == ProcessOutcome(exit_code=0, signal=None)


@pytest.mark.anyio
async def test_stderr_flood_does_not_block_the_child_and_the_tail_keeps_the_newest_400_lines() -> None:
    async with managed_child("stderr_flood.py", capture_stderr=True) as handle:
        with anyio.fail_after(COLD_START_S):
            outcome = await handle.wait_outcome()
            await handle.wait_stderr_closed()
        assert outcome == ProcessOutcome(exit_code=0, signal=None)
        tail = handle.stderr_tail
        assert len(tail) == 400
        assert tail[-1] == "last fragment"
        assert tail[-2] == f"flood line {FLOOD_LINES - 1:024d}"
        assert tail[0] == f"flood line {FLOOD_LINES - 399:024d}"


@pytest.mark.anyio
async def test_inherited_stderr_leaves_the_tail_empty() -> None:
    async with managed_child("exit_on_eof.py") as handle:
        with anyio.fail_after(5):
            await handle.wait_stderr_closed()
        assert handle.stderr_tail == ()


def _non_executable(tmp_path: Path) -> list[str]:
    script = tmp_path / "not-executable"
    script.write_text("#!/bin/sh\n")
    script.chmod(stat.S_IRUSR | stat.S_IWUSR)
    return [str(script)]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("missing executable", FileNotFoundError),
        ("nonexistent cwd", FileNotFoundError),
        ("cwd is a file", NotADirectoryError),
        ("non-executable file", PermissionError),
    ],
)
async def test_spawn_failure_raises_the_os_error_and_leaves_no_handle(
    tmp_path: Path, case: str, expected: type[OSError]
) -> None:
    argv = [PYTHON, "-c", "pass"]
    cwd = str(tmp_path)
    if case == "missing executable":
        argv = [str(tmp_path / "no-such-agent")]
    elif case == "nonexistent cwd":
        cwd = str(tmp_path / "missing")
    elif case == "cwd is a file":
        (tmp_path / "file").write_text("")
        cwd = str(tmp_path / "file")
    else:
        argv = _non_executable(tmp_path)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            with pytest.raises(expected):
                await spawn_managed(argv, cwd=cwd, env=build_child_env({}), task_group=tg, grace_ms=GRACE_MS)


@pytest.mark.anyio
async def test_wait_exit_returns_false_when_the_bound_expires_on_a_live_child() -> None:
    async with managed_child("sigterm_trap.py") as handle:
        with anyio.fail_after(COLD_START_S):
            assert await read_line(handle) == "armed"
        with anyio.fail_after(5):
            assert await handle.wait_exit(50) is False
        assert handle.outcome is None
        assert not handle.tree_gone()


@pytest.mark.anyio
async def test_concurrent_terminate_calls_share_one_escalation() -> None:
    async with managed_child("sigterm_trap.py") as handle:
        with anyio.fail_after(COLD_START_S):
            assert await read_line(handle) == "armed"
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(handle.terminate)
                tg.start_soon(handle.terminate)
            await handle.wait_reaped()
            await handle.terminate()
        assert handle.outcome == ProcessOutcome(exit_code=None, signal="SIGKILL")
        assert handle.tree_gone()


@pytest.mark.anyio
async def test_ladder_completes_even_when_its_caller_is_cancelled() -> None:
    async with managed_child("eof_deaf.py") as handle:
        outcome: ProcessOutcome | None = None
        with anyio.fail_after(5), anyio.CancelScope() as scope:
            scope.cancel()
            await run_teardown_ladder(handle, eof_grace_ms=50, aggregate_message=ACP_TEARDOWN_FAILED)
            outcome = handle.outcome
            await anyio.lowlevel.checkpoint()
        assert scope.cancelled_caught
        assert outcome == ProcessOutcome(exit_code=None, signal="SIGTERM")


@pytest.mark.anyio
async def test_aclose_of_a_handle_never_torn_down_releases_its_pipes() -> None:
    async with anyio.create_task_group() as tg:
        handle = await spawn_managed(
            [PYTHON, str(CHILDREN / "exit_on_eof.py")],
            cwd=str(CHILDREN),
            env=build_child_env({}),
            task_group=tg,
            grace_ms=GRACE_MS,
            capture_stderr=True,
        )
        with anyio.fail_after(COLD_START_S):
            await handle.close_stdin()
            assert await handle.wait_outcome() == ProcessOutcome(exit_code=0, signal=None)
            await handle.aclose()
            await handle.aclose()
        # The leak check of tests/conftest.py proves no pipe is left open.


@pytest.mark.anyio
async def test_aclose_of_a_live_child_kills_its_tree() -> None:
    async with anyio.create_task_group() as tg:
        handle = await spawn_managed(
            [PYTHON, str(CHILDREN / "sigterm_trap.py")],
            cwd=str(CHILDREN),
            env=build_child_env({}),
            task_group=tg,
            grace_ms=GRACE_MS,
        )
        with anyio.fail_after(COLD_START_S):
            assert await read_line(handle) == "armed"
            await handle.aclose()
        assert handle.outcome == ProcessOutcome(exit_code=None, signal="SIGKILL")
        with pytest.raises(anyio.ClosedResourceError):
            await handle.stdout.receive()


@pytest.mark.anyio
async def test_closing_stdin_of_a_dead_child_is_not_an_error() -> None:
    async with managed_child("eof_deaf.py") as handle:
        with anyio.fail_after(5):
            await handle.terminate()
            await handle.wait_reaped()
            await handle.close_stdin()
            await handle.close_stdin()
        assert handle.outcome == ProcessOutcome(exit_code=None, signal="SIGTERM")
