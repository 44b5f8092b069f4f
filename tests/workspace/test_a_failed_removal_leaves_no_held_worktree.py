"""A session worktree whose removal failed (here: another host held the repository lock past its bound) stays
locked with a reason naming this live host. Once its removal was attempted this process no longer holds it, so the
session's next turn in this same host salvages it as a dead host's leftover and checks the branch out again,
instead of failing with "in use by another subagent-host process" until the host ends. A worktree this process
still holds stays protected from another ``Workspaces`` in the same process (two hosts in one process)."""

from __future__ import annotations

import fcntl
import hashlib
import os
from pathlib import Path

import anyio
import pytest

import host.workspace._git as git_module
from host._exceptions import WorkspaceError
from host.workspace import Workspaces
from tests.workspace._helpers import git, make_repo, worktree_paths

pytestmark = pytest.mark.anyio

_TIMEOUT_S = 60


def _hold_repo_lock(state: Path, common_dir: str) -> int:
    """Take the repository's cross-process lock as another host would (an flock on its own descriptor)."""
    name = hashlib.sha256(common_dir.encode("utf-8", "surrogateescape")).hexdigest()[:32] + ".lock"
    fd = os.open(state / "worktrees" / ".locks" / name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


async def test_a_worktree_left_by_a_failed_removal_is_salvaged_by_the_same_hosts_next_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    workspaces = Workspaces(state)
    with anyio.fail_after(_TIMEOUT_S):
        workspace = await workspaces.acquire(str(repo), "left")
        worktree = Path(workspace.path)
        (worktree / "a.txt").write_text("the first turn's work\n")
        assert await workspaces.after_turn(workspace, "left-turn-1") is not None
        (worktree / "b.txt").write_text("work after the last recorded turn\n")

        with pytest.raises(WorkspaceError, match="in use by another subagent-host process"):
            await Workspaces(state).reopen(workspace)  # held here: another host in this process keeps off

        monkeypatch.setattr(git_module, "REPO_LOCK_TIMEOUT_S", 0.3)
        fd = _hold_repo_lock(state, workspace.repo.common_dir)
        try:
            with pytest.raises(WorkspaceError) as raised:
                await workspaces.release(workspace)
            assert raised.value.kind == "lock-timeout"
        finally:
            os.close(fd)
        assert str(worktree) in worktree_paths(repo)  # left behind, still locked naming this process

        again = await workspaces.reopen(workspace)
        assert again.path == str(worktree)
        assert (worktree / "b.txt").read_text() == "work after the last recorded turn\n"  # salvaged, checked out
        assert (worktree / "a.txt").read_text() == "the first turn's work\n"
        assert "b.txt" in git(repo, "ls-tree", "--name-only", workspace.branch)
        await workspaces.release(again)
    assert worktree_paths(repo) == [str(repo)]
