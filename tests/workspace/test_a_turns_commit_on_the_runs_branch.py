"""The commit a turn leaves on the run's branch. A child that leaves its worktree's HEAD on a branch with no commit
yet (``git checkout --orphan``) still has its turn recorded: the changes from the baseline, the patch, and a commit
of the worktree's tree on the run's branch (with no parent: HEAD had none). A child that committed all its work
itself gets no extra commit: the commit step spawned ahead of its input is killed before it writes anything."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from host._exceptions import WorkspaceError
from host.workspace import Workspaces
from tests.workspace._helpers import git, make_repo

pytestmark = pytest.mark.anyio

_TIMEOUT_S = 60


async def test_a_child_on_an_orphan_branch_keeps_its_changes_on_the_runs_branch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    workspaces = Workspaces(tmp_path / "state")
    with anyio.fail_after(_TIMEOUT_S):
        workspace = await workspaces.acquire(str(repo), "orphan")
        worktree = Path(workspace.path)
        git(worktree, "checkout", "-q", "--orphan", "elsewhere")
        (worktree / "a.txt").write_text("one\ntwo\nthree\nfour\n")
        (worktree / "new.txt").write_text("new\n")
        changes = await workspaces.after_turn(workspace, "orphan-run")
        assert changes is not None
        assert {(item.path, item.status) for item in changes.files} == {("a.txt", "modified"), ("new.txt", "added")}
        assert (changes.insertions, changes.deletions) == (2, 0)
        tip = git(repo, "rev-parse", f"{workspace.branch}^{{tree}}").strip()
        assert tip == git(worktree, "write-tree").strip()
        assert git(repo, "rev-list", "--count", workspace.branch).strip() == "1"  # HEAD had no commit: no parent
        patch = workspaces.runs_dir / "orphan-run.patch"
        scratch = tmp_path / "scratch"
        git(repo, "worktree", "add", "-q", "--detach", str(scratch), workspace.baseline.commit)
        git(scratch, "apply", "--index", str(patch))
        assert git(scratch, "write-tree").strip() == tip
        git(repo, "worktree", "remove", "--force", str(scratch))
        await workspaces.release(workspace)


async def test_a_child_that_committed_everything_itself_gets_no_extra_commit(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    workspaces = Workspaces(tmp_path / "state")
    with anyio.fail_after(_TIMEOUT_S):
        workspace = await workspaces.acquire(str(repo), "committed")
        worktree = Path(workspace.path)
        (worktree / "b.txt").write_text("bee\nhive\n")
        git(worktree, "commit", "-q", "-a", "-m", "the child's own commit")
        own = git(worktree, "rev-parse", "HEAD").strip()
        objects = git(repo, "count-objects", "-v")
        changes = await workspaces.after_turn(workspace, "committed-run")
        assert changes is not None
        assert [(item.path, item.status, item.insertions) for item in changes.files] == [("b.txt", "modified", 1)]
        assert git(repo, "rev-parse", workspace.branch).strip() == own
        assert git(repo, "count-objects", "-v") == objects  # no commit object was written and left unreferenced
        await workspaces.release(workspace)


async def test_a_forged_index_entry_fails_the_turn_and_moves_no_ref(tmp_path: Path) -> None:
    """``write-tree --missing-ok`` trusts the index; the child can forge an entry ``add -A`` keeps (skip-worktree,
    an id with no object). The diff reads it and fails, and the branch's update waits for the diff: the turn fails
    with a ``WorkspaceError``, the branch stays where it was, and no patch is left. A large change sorted before the
    forged path makes the diff slower, so without that wait the branch could already have moved (a race: this caught
    it in one of three runs without the wait)."""
    repo = make_repo(tmp_path / "repo")
    workspaces = Workspaces(tmp_path / "state")
    with anyio.fail_after(_TIMEOUT_S):
        workspace = await workspaces.acquire(str(repo), "forged")
        worktree = Path(workspace.path)
        (worktree / "aaa.bin").write_bytes(os.urandom(24 * 2**20))
        git(worktree, "update-index", "--add", "--cacheinfo", f"100644,{'1' * 40},zzz-ghost.txt")
        git(worktree, "update-index", "--skip-worktree", "zzz-ghost.txt")
        before = git(repo, "rev-parse", workspace.branch).strip()
        with pytest.raises(WorkspaceError):
            await workspaces.after_turn(workspace, "forged-run")
        assert git(repo, "rev-parse", workspace.branch).strip() == before
        assert git(worktree, "rev-parse", "HEAD").strip() == before
        assert not list(workspaces.runs_dir.glob("forged-run.*"))
        await workspaces.release(workspace)
