"""Reclaim reads a worktree's admin directory from its ``.git`` file, which lives in the worktree and so is the
child's to rewrite: a path that git's own back-link does not confirm is never followed, never chooses where git
runs, and never reaches a log or an error text; the real worktree beside it is still reclaimed."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from host.workspace import Workspaces
from tests.workspace._helpers import make_repo, worktree_paths

pytestmark = pytest.mark.anyio

_DEAD_LOCK = "subagent-host pid=999999 started=1.00 base=" + "0" * 40


async def test_a_rewritten_git_file_is_not_followed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    repo = make_repo(tmp_path / "repo")
    workspaces = Workspaces(tmp_path / "state")
    real = await workspaces.acquire(str(repo), "real")
    decoy = tmp_path / "decoy-admin"  # what a child points its .git at: a lock naming a dead pid, as ours would
    decoy.mkdir()
    (decoy / "locked").write_text(_DEAD_LOCK)
    forged = tmp_path / "state" / "worktrees" / "forged"
    forged.mkdir()
    (forged / ".git").write_text(f"gitdir: {decoy}\n")
    broken = tmp_path / "state" / "worktrees" / "broken"
    broken.mkdir()
    (broken / ".git").write_text("gitdir: /etc/passwd\n")
    with caplog.at_level(logging.DEBUG):
        reclaimed = await workspaces.reclaim()
    assert reclaimed == []  # the real worktree's owner (this process) is alive; the forged ones are not ours
    assert (decoy / "locked").read_text() == _DEAD_LOCK and forged.exists() and broken.exists()
    assert "/etc/passwd" not in caplog.text and str(decoy) not in caplog.text
    assert [path for path in worktree_paths(repo) if "worktrees" in path] == [real.path]
    await workspaces.release(real, keep_branch=False)
    assert not [path for path in worktree_paths(repo) if "worktrees" in path]
