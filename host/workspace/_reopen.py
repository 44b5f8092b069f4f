"""A session's worktree after its host let it go: recreated at a cold resume, or retired when the session closes.

A session's branch ``subagent-host/<session_id>`` is its durable state: every turn commits on it, so removing the
worktree (a host closing, a reclaim after a host died) loses nothing. ``reopen_worktree`` checks the branch out
again at the same path, locked for this host (from the baseline commit when the branch is gone: the session had no
changes); ``retire_branch`` deletes the branch of a closed session unless it holds changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import anyio

from host._exceptions import WorkspaceError
from host.workspace._git import RepoLocks, git
from host.workspace._worktree import (
    Workspace,
    copy_included,
    hold_path,
    let_go_path,
    lock_reason,
    remove_worktree,
)

__all__ = ["WORKTREE_IN_USE", "WORKTREE_LOST", "reopen_worktree", "retire_branch"]

WORKTREE_IN_USE: Final = "the worktree of session {owner} is in use by another subagent-host process"
"""A live host holds the session's worktree (``run --session`` while ``serve`` holds the same session)."""
WORKTREE_LOST: Final = (
    "the worktree of session {owner} cannot be recreated: neither its branch {branch} nor its baseline commit is "
    "left in {repo}"
)
"""The repository, the branch and the baseline are all gone: the session cannot continue in its workspace."""


def _directories(*paths: str) -> bool:
    return all(Path(path).is_dir() for path in paths)


async def _exists(ref: str, cwd: str) -> bool:
    return (await git(["rev-parse", "--verify", "-q", ref], cwd=cwd, check=False)).returncode == 0


async def reopen_worktree(saved: Workspace, locks: RepoLocks) -> Workspace:
    """``git worktree add --lock`` at ``saved.path`` on the session's branch (or a new branch at the baseline when
    the branch is gone), then the ``.worktreeinclude`` copies. On any failure nothing is left behind.

    Raises:
        WorkspaceError: ``worktree-lost`` (no repository, branch or baseline), or git failed.
    """
    repo = saved.repo
    lost = WorkspaceError(
        WORKTREE_LOST.format(owner=saved.owner, branch=saved.branch, repo=repo.toplevel), "worktree-lost"
    )
    if not _directories(repo.common_dir, repo.toplevel):
        raise lost
    workspace = Workspace(owner=saved.owner, repo=repo, path=saved.path, branch=saved.branch, baseline=saved.baseline)
    reason = lock_reason(saved.baseline)
    added = False
    try:
        hold_path(saved.path)
        async with locks.hold(repo.common_dir):
            await git(["worktree", "prune"], cwd=repo.common_dir, check=False)
            if await _exists(f"refs/heads/{saved.branch}^{{commit}}", repo.common_dir):
                argv = ["worktree", "add", "--lock", "--reason", reason, saved.path, saved.branch]
            elif await _exists(f"{saved.baseline.commit}^{{commit}}", repo.common_dir):
                argv = ["worktree", "add", "--lock", "--reason", reason, "-b", saved.branch, saved.path]
                argv.append(saved.baseline.commit)
            else:
                raise lost
            await git(argv, cwd=repo.toplevel)
            added = True
        await copy_included(repo.toplevel, saved.path)
        tip = await git(["rev-parse", "HEAD^{tree}"], cwd=saved.path)
        workspace.changed = tip.stdout.decode("ascii").strip() != saved.baseline.tree
    except BaseException:
        if added:
            with anyio.CancelScope(shield=True):
                await remove_worktree(workspace, locks, keep_branch=True)  # the branch is the session's work
        else:
            let_go_path(saved.path)
        raise
    return workspace


async def retire_branch(saved: Workspace, locks: RepoLocks) -> None:
    """Delete a closed session's branch when its tip holds no changes (tree = the baseline's); keep it otherwise."""
    common = saved.repo.common_dir
    if not _directories(common):
        return
    async with locks.hold(common):
        tip = await git(["rev-parse", "--verify", "-q", f"refs/heads/{saved.branch}^{{tree}}"], cwd=common, check=False)
        if tip.returncode == 0 and tip.stdout.decode("ascii").strip() == saved.baseline.tree:
            await git(["branch", "-D", saved.branch], cwd=common, check=False)
