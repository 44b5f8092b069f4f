"""A git step cut off while it holds ``index.lock`` (cancelled by the caller, or past its ``timeout_s``) leaves
neither the lock nor a process behind: its process group gets SIGTERM first (git removes its lock files on it; a
SIGKILL would leave ``index.lock`` and fail every later git command there), and whatever it started (a clean filter
here) goes with it. Real git, whose ``add`` runs a slow clean filter while it holds the index lock."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import anyio
import pytest

from host._exceptions import WorkspaceError
from host.workspace._git import git as host_git
from tests._provider_helpers import wait_until_gone
from tests.workspace._helpers import git, make_repo

pytestmark = pytest.mark.anyio

_TIMEOUT_S = 30
_GONE_WITHIN_S = 5.0


def _slow_filter_repo(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose ``slow.bin`` runs a clean filter that writes its pid, then sleeps (holding git up)."""
    repo = make_repo(tmp_path / "repo")
    pid_file = tmp_path / "filter.pid"
    git(repo, "config", "filter.slow.clean", f"printf %s $$ > '{pid_file}'; exec sleep 60")
    (repo / ".gitattributes").write_text("slow.bin filter=slow\n")
    (repo / "slow.bin").write_bytes(b"held up\n")
    return repo, pid_file


async def _wait_for_filter(pid_file: Path) -> None:
    """Poll until the filter wrote its pid (the caller bounds this)."""
    written = anyio.Path(pid_file)
    while True:
        if await written.exists() and await written.read_text():
            return
        await anyio.sleep(0.01)


async def _assert_nothing_left(repo: Path, pid_file: Path) -> None:
    assert not (repo / ".git" / "index.lock").exists()
    with anyio.fail_after(_GONE_WITHIN_S):  # the filter git started must not outlive the cut-off step
        await wait_until_gone(int(await anyio.Path(pid_file).read_text()))
    git(repo, "config", "--unset", "filter.slow.clean")
    git(repo, "add", "-A")  # the index is usable again


async def test_a_cancelled_git_step_holding_the_index_lock_leaves_no_lock_and_no_process(tmp_path: Path) -> None:
    repo, pid_file = _slow_filter_repo(tmp_path)
    with anyio.fail_after(_TIMEOUT_S):
        async with anyio.create_task_group() as group:
            group.start_soon(partial(host_git, ["add", "-A", "--", "."], cwd=repo))
            await _wait_for_filter(pid_file)
            assert (repo / ".git" / "index.lock").exists()  # the filter runs while git holds the lock
            group.cancel_scope.cancel()
    await _assert_nothing_left(repo, pid_file)


async def test_a_timed_out_git_step_holding_the_index_lock_leaves_no_lock_and_no_process(tmp_path: Path) -> None:
    repo, pid_file = _slow_filter_repo(tmp_path)
    with anyio.fail_after(_TIMEOUT_S), pytest.raises(WorkspaceError) as raised:
        await host_git(["add", "-A", "--", "."], cwd=repo, timeout_s=3.0)
    assert raised.value.kind == "git-timeout"
    assert pid_file.read_text()  # the filter had started: git held the lock when its bound ran out
    await _assert_nothing_left(repo, pid_file)
