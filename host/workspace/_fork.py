"""Where a forked session's worktree starts: the source session's work, not the parent's tree.

A fork (``fork_session_id``) opens a new session whose child starts with the source's conversation, so its worktree
starts from the source's files: branch ``subagent-host/<fork>`` at the tip of ``subagent-host/<source>`` (the
source's recorded turns), with the source's baseline, so the fork's turns are cumulative from the same point as the
source's. ``fork_start`` picks the commit: the source branch's tip, else the source's baseline commit (a source that
closed without changes had its branch deleted), else ``None`` (neither is left, or the fork's cwd is in another
repository): the caller then makes a fresh worktree from the parent's tree, as for any new session.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Final, Literal

from host.workspace._baseline import Repository
from host.workspace._git import git
from host.workspace._worktree import Workspace, branch_of

__all__ = ["ForkStart", "fork_start"]

_COMMIT: Final = re.compile(r"^[0-9a-f]{40,64}$")


@dataclass(frozen=True, slots=True)
class ForkStart:
    """The commit a fork's branch starts at, its tree, and which of the source's facts it is."""

    commit: str
    tree: str
    origin: Literal["branch", "baseline"]


def _same_repository(source: Repository, repo: Repository) -> bool:
    try:
        return os.path.samefile(source.common_dir, repo.common_dir)
    except OSError:  # the source's repository is gone
        return False


async def _resolve(ref: str, repo: Repository) -> tuple[str, str] | None:
    found = await git(["rev-parse", "--verify", "-q", ref + "^{commit}"], cwd=repo.common_dir, check=False)
    if found.returncode != 0:
        return None
    commit = found.stdout.decode("ascii").strip()
    tree = await git(["rev-parse", "--verify", "-q", commit + "^{tree}"], cwd=repo.common_dir)
    return commit, tree.stdout.decode("ascii").strip()


async def fork_start(source: Workspace, repo: Repository) -> ForkStart | None:
    """The commit the fork of the session whose worktree ``source`` describes starts at, in ``repo`` (the fork's
    cwd's repository): the tip of the source's branch, else its baseline commit; ``None`` when ``repo`` is not the
    source's repository or neither is left. Only host-built names reach git (the branch of the source's owner, a
    commit id)."""
    if not _same_repository(source.repo, repo):
        return None
    if source.branch == branch_of(source.owner):
        found = await _resolve("refs/heads/" + source.branch, repo)
        if found is not None:
            return ForkStart(*found, origin="branch")
    if _COMMIT.match(source.baseline.commit):
        found = await _resolve(source.baseline.commit, repo)
        if found is not None:
            return ForkStart(*found, origin="baseline")
    return None
