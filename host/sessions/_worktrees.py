"""The worktrees of one host's ``worktree`` sessions: one per session, kept across its turns, removed at its close.

A ``worktree`` session's first turn makes its worktree (branch ``subagent-host/<session_id>``) and hands it to the
session (``hold``): the facts are written into the session file at once, so any later host can recreate it. It stays
while the session lives in this host, warm or cold (idle, evicted): its lock names this live host, so no other
host's reclaim touches it. Closing the session (``session_close``, ``sessions close``, the TTL) removes it and
keeps the branch only when it holds changes. Closing the host removes every held worktree and keeps its branch (the
session's durable state): the session's next turn, in any host, checks the branch out again (``Workspaces.reopen``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Final

import anyio
from anyio.abc import TaskGroup

from host._exceptions import WorkspaceError
from host.sessions._store import SessionRecord, SessionWorktree, write_session_file
from host.workspace import Baseline, Repository, Workspace, Workspaces

__all__ = ["WORKTREE_CLOSE_TIMEOUT_S", "SessionWorktrees", "facts_of", "workspace_of"]

logger = logging.getLogger(__name__)

WORKTREE_CLOSE_TIMEOUT_S: Final = 120.0
"""Bounds removing one session's worktree (git's own bound, plus the repository lock)."""


def facts_of(workspace: Workspace) -> SessionWorktree:
    """What the session file keeps of a worktree."""
    repo = workspace.repo
    return SessionWorktree(
        repo=repo.toplevel,
        common_dir=repo.common_dir,
        git_dir=repo.git_dir,
        prefix=repo.prefix,
        path=workspace.path,
        branch=workspace.branch,
        base=workspace.baseline.commit,
        base_tree=workspace.baseline.tree,
    )


def workspace_of(owner: str, facts: SessionWorktree) -> Workspace:
    """The worktree a session file describes (not necessarily present on disk)."""
    repo = Repository(
        toplevel=facts.repo, common_dir=facts.common_dir, git_dir=facts.git_dir, prefix=facts.prefix, head=None
    )
    baseline = Baseline(facts.base, facts.base_tree)
    return Workspace(owner=owner, repo=repo, path=facts.path, branch=facts.branch, baseline=baseline)


class SessionWorktrees:
    """The live worktrees of a host's sessions, by session id, and their removal (bounded, shielded, logged)."""

    def __init__(self, workspaces: Workspaces, state_dir: Path | None, task_group: TaskGroup) -> None:
        self._workspaces = workspaces
        self._state_dir = state_dir
        self._task_group = task_group
        self._live: dict[str, Workspace] = {}
        self._pending = 0
        self._settled = anyio.Event()

    def live(self, session_id: str) -> Workspace | None:
        """The worktree this host holds for the session."""
        return self._live.get(session_id)

    def hold(self, record: SessionRecord, workspace: Workspace) -> None:
        """The session owns ``workspace`` from now on; its facts are written into the session file at once."""
        self._live[record.session_id] = workspace
        record.worktree = facts_of(workspace)
        if self._state_dir is not None:
            try:
                write_session_file(self._state_dir, record)
            except OSError as exc:
                logger.warning("subagent-host: writing session %s failed: %s", record.session_id, exc.strerror)

    def close_soon(self, record: SessionRecord) -> None:
        """Remove the session's worktree in the host's task group (``aclose`` waits for it)."""
        if record.session_id not in self._live and record.worktree is None:
            return
        self._pending += 1
        if self._pending == 1:
            self._settled = anyio.Event()
        self._task_group.start_soon(self._close, record, name="session worktree removal")

    async def _close(self, record: SessionRecord) -> None:
        try:
            await self.close(record)
        finally:
            self._pending -= 1
            if self._pending == 0:
                self._settled.set()

    async def close(self, record: SessionRecord) -> None:
        """Remove the session's worktree (held here, or left by a dead host); the branch stays when it holds
        changes. A worktree another live host holds is left to that host. Never raises."""
        workspace = self._live.pop(record.session_id, None)
        with anyio.CancelScope(shield=True), anyio.move_on_after(WORKTREE_CLOSE_TIMEOUT_S):
            try:
                if workspace is not None:
                    await self._workspaces.release(workspace)
                elif record.worktree is not None:
                    await self._workspaces.retire(workspace_of(record.session_id, record.worktree))
            except (WorkspaceError, OSError, ValueError):
                logger.warning("subagent-host: removing the worktree of session %s failed", record.session_id)

    async def aclose(self) -> None:
        """The host closes: wait for pending removals, then remove every held worktree, its branch kept."""
        with anyio.CancelScope(shield=True):
            if self._pending:
                await self._settled.wait()
            held, self._live = list(self._live.values()), {}
            if not held:
                return
            async with anyio.create_task_group() as group:
                for workspace in held:
                    group.start_soon(self._release_keeping_branch, self._workspaces, workspace)

    @staticmethod
    async def _release_keeping_branch(workspaces: Workspaces, workspace: Workspace) -> None:
        with anyio.move_on_after(WORKTREE_CLOSE_TIMEOUT_S):
            try:
                await workspaces.release(workspace, keep_branch=True)
            except (WorkspaceError, OSError):
                logger.warning("subagent-host: removing the worktree of session %s failed", workspace.owner)
