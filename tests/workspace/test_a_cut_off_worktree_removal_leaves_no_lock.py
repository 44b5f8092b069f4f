"""A session worktree removal cut off by its bound (``WORKTREE_CLOSE_TIMEOUT_S``, 120 s) while it salvages a dead
host's leftover leaves no lock behind: the git step it cut off (``add -A``, holding the worktree's
``<common dir>/worktrees/<owner>/index.lock``) gets SIGTERM and removes its lock, so the next attempt salvages and
removes the worktree. (With a SIGKILL the lock stayed, and every later salvage of that worktree failed on it.) The
removal is held up by a slow clean filter in the repository's config, as a huge tree on a slow disk would."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest

import host.sessions._worktrees as session_worktrees
from host.sessions._store import SessionRecord
from host.sessions._worktrees import SessionWorktrees, facts_of
from host.workspace import Workspaces
from tests._provider_helpers import wait_until_gone
from tests.workspace._helpers import git, make_repo, our_branches, worktree_paths

pytestmark = pytest.mark.anyio

_TIMEOUT_S = 60
_CUT_OFF_S = 4.0  # the salvage reaches its add -A well within it, even on a loaded machine
_GONE_WITHIN_S = 5.0


async def _keep_no_file(_: SessionRecord) -> None:
    """The removal writes no session file here (the worktree is not held: nothing to record)."""


async def _assert_no_lock_and_no_filter(admin: Path, pid_file: Path) -> None:
    assert await anyio.Path(pid_file).read_text()  # the salvage's add -A was running the filter, holding the index lock
    assert not (admin / "index.lock").exists()
    with anyio.fail_after(_GONE_WITHIN_S):  # the filter git started must not outlive the cut-off step
        await wait_until_gone(int(await anyio.Path(pid_file).read_text()))


async def test_a_removal_cut_off_by_its_bound_leaves_no_lock_and_the_next_one_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo")
    workspaces = Workspaces(tmp_path / "state")
    pid_file = tmp_path / "filter.pid"
    with anyio.fail_after(_TIMEOUT_S):
        workspace = await workspaces.acquire(str(repo), "cutoff")
    worktree = Path(workspace.path)
    admin = Path(git(worktree, "rev-parse", "--absolute-git-dir").strip())
    (admin / "locked").write_text(f"subagent-host pid={os.getpid()} started=1.00 base={workspace.baseline.commit}")
    (worktree / ".gitattributes").write_text("slow.bin filter=slow\n")
    (worktree / "slow.bin").write_bytes(b"the dead host's work\n")
    git(repo, "config", "filter.slow.clean", f"printf %s $$ > '{pid_file}'; exec sleep 60")
    now = datetime.now(UTC).isoformat()
    record = SessionRecord(session_id="cutoff", provider="p", kind="acp", created=now, last_used=now)
    record.worktree = facts_of(workspace)
    monkeypatch.setattr(session_worktrees, "WORKTREE_CLOSE_TIMEOUT_S", _CUT_OFF_S)

    async def close_once() -> None:
        async with anyio.create_task_group() as group:
            removals = SessionWorktrees(workspaces, group, persist=_keep_no_file)
            removals.close_soon(record)  # not held here: a dead host's leftover, salvaged, then removed
            await removals.aclose()

    with anyio.fail_after(_TIMEOUT_S):
        started = time.monotonic()
        await close_once()
        assert time.monotonic() - started < _CUT_OFF_S + 5  # cut off by the bound (plus git's SIGTERM grace)
    await _assert_no_lock_and_no_filter(admin, pid_file)
    assert str(worktree) in worktree_paths(repo)  # still there, still locked for the next attempt

    git(repo, "config", "--unset", "filter.slow.clean")
    with anyio.fail_after(_TIMEOUT_S):
        await close_once()
    assert str(worktree) not in worktree_paths(repo)
    assert not await anyio.Path(worktree).exists()
    assert our_branches(repo) == ["subagent-host/cutoff"]  # the salvaged work is kept on its branch
    assert "slow.bin" in git(repo, "ls-tree", "--name-only", "subagent-host/cutoff")
