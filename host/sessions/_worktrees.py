"""The worktrees of one host's ``worktree`` sessions: one per session, on disk while its child is warm.

A ``worktree`` session's first turn makes its worktree (branch ``subagent-host/<session_id>``) and hands it to the
session (``hold``): the facts (repository, branch, baseline) are written into the session file at once. Every turn
commits its edits on the branch, so the branch is the session's durable state and the worktree only a checkout of
it. The worktree stays while the session's child is warm (its lock names this live host, so no reclaim touches it)
and is removed as soon as the session is cold and no turn runs (``settle``: after a turn that kept no child, an
idle or evicted child, the host closing) or closed; the branch stays when it holds changes. The next turn, in this
host or any later one, checks the branch out again at the same path (``Workspaces.reopen``; from the baseline commit
when there was no branch to keep). So the worktrees on disk are bounded by the warm and busy sessions
(``max_warm_sessions``), and a session that is never continued costs no more than a one-shot run.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final

import anyio
from anyio.abc import TaskGroup

from host._exceptions import WorkspaceError
from host.sessions._store import SessionRecord, SessionWorktree
from host.workspace import Baseline, Repository, Workspace, Workspaces

__all__ = ["WORKTREE_CLOSE_TIMEOUT_S", "SessionWorktrees", "facts_of", "workspace_of"]

if TYPE_CHECKING:
    from host.sessions._session import Session

logger = logging.getLogger(__name__)

WORKTREE_CLOSE_TIMEOUT_S: Final = 120.0
"""Bounds the wait for the same session's earlier removal and a dead host's leftover's retirement; a held
worktree's removal (``Workspaces.release``) is shielded inside, so only its own bounds end it: the repository
lock's wait (120 s) and git's bound per command (300 s)."""


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

    def __init__(
        self,
        workspaces: Workspaces,
        task_group: TaskGroup,
        *,
        persist: Callable[[SessionRecord], Awaitable[None]],
    ) -> None:
        """``persist`` writes a session's file the table's way (never over another process's close; logged)."""
        self._workspaces = workspaces
        self._persist = persist
        self._task_group = task_group
        self._live: dict[str, Workspace] = {}
        self._pending = 0
        self._settled = anyio.Event()
        self._removing: dict[str, anyio.Event] = {}

    async def live(self, session_id: str) -> Workspace | None:
        """The worktree this host holds for the session, once a removal of it that is under way has finished (so
        a turn right after the session went cold recreates it only when the old one is gone)."""
        removing = self._removing.get(session_id)
        if removing is not None:
            await removing.wait()
        return self._live.get(session_id)

    async def hold(self, record: SessionRecord, workspace: Workspace) -> None:
        """The session owns ``workspace`` from now on; its facts are written into the session file before this
        returns."""
        self._live[record.session_id] = workspace
        record.worktree = facts_of(workspace)
        await self._persist(record)

    def settle(self, session: Session) -> None:
        """After the session changed state: remove its worktree (in the host's task group) when it is closed, or
        cold with no turn running; else keep it."""
        if session.busy:
            return  # a turn works in it; the turn's end settles again
        if session.record.state == "closed":
            self.close_soon(session.record)
        elif session.warm is None and session.id in self._live:
            self._start(self._live.pop(session.id), held=True)

    def close_soon(self, record: SessionRecord) -> None:
        """Remove a closed (or forgotten) session's worktree: the one held here, else a dead host's leftover; a
        worktree a live host holds is left to it. The branch stays when it holds changes."""
        workspace = self._live.pop(record.session_id, None)
        if workspace is not None:
            self._start(workspace, held=True)
        elif record.worktree is not None:
            self._start(workspace_of(record.session_id, record.worktree), held=False)

    def _start(self, workspace: Workspace, *, held: bool) -> None:
        before = self._removing.get(workspace.owner)  # one removal per session at a time, in order
        done = self._removing[workspace.owner] = anyio.Event()
        self._pending += 1
        if self._pending == 1:
            self._settled = anyio.Event()
        self._task_group.start_soon(self._remove, workspace, held, before, done, name="session worktree removal")

    async def _remove(self, workspace: Workspace, held: bool, before: anyio.Event | None, done: anyio.Event) -> None:
        try:
            with anyio.CancelScope(shield=True), anyio.move_on_after(WORKTREE_CLOSE_TIMEOUT_S):
                if before is not None:
                    await before.wait()
                try:
                    if held:
                        await self._workspaces.release(workspace)  # the branch stays when it holds changes
                    else:
                        await self._workspaces.retire(workspace)
                except (WorkspaceError, OSError, ValueError):
                    logger.warning("subagent-host: removing the worktree of session %s failed", workspace.owner)
        finally:
            done.set()
            if self._removing.get(workspace.owner) is done:
                del self._removing[workspace.owner]
            self._pending -= 1
            if self._pending == 0:
                self._settled.set()

    async def aclose(self) -> None:
        """The host closes (every session went cold): remove what is still held, wait for every removal."""
        with anyio.CancelScope(shield=True):
            held, self._live = list(self._live.values()), {}
            for workspace in held:
                self._start(workspace, held=True)
            if self._pending:
                await self._settled.wait()
