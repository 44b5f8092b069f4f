"""One session and one turn's lease of it.

A ``Session`` is the one owner of its warm child between turns. A turn takes the session's FIFO lock, borrows the
warm child through a ``TurnLease`` (``host.run._lease.SessionLease``), and at release the run either hands a live,
settled child back (``keep``) or took it down itself. ``finish`` records the turn and releases the lock.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

import anyio

from host._exceptions import StartAbortedError
from host.cancel import CancelSignal
from host.run._lease import WarmChild
from host.sessions._store import SessionCapability, SessionRecord
from host.sessions._worktrees import SessionWorktrees, workspace_of
from host.workspace import Workspace

__all__ = ["SESSION_WAIT_ABORTED", "Session", "TurnLease"]

SESSION_WAIT_ABORTED: Final = "subagent request was aborted while waiting for its session's previous turn"


@dataclass(slots=True, eq=False)
class Session:
    """A session's record, its turn lock, and the warm child it owns between turns."""

    record: SessionRecord
    idle_ms: float
    """The entry's ``session_idle_ms``."""
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    """One turn at a time; anyio's lock is fair, so waiters are served first come, first served."""
    warm: WarmChild | None = None
    """The live child kept between turns (``None`` while a turn borrows it, or when cold)."""
    busy: bool = False
    idle_since: float = field(default_factory=time.monotonic)
    """``time.monotonic()`` when the last turn ended (the idle and LRU clocks)."""
    file_stamp: tuple[int, int, int] | None = None
    """The session file's stamp at this host's last write or read (``host.sessions._watch``)."""
    fork_source: SessionRecord | None = None
    """The record of the session this one was forked from (``fork_session_id``; ``None``: not a fork, or a fork
    loaded from its file); its first turn starts its worktree from the source's work."""

    @property
    def id(self) -> str:
        """The host-minted session id."""
        return self.record.session_id

    async def take_turn(self, signal: CancelSignal) -> None:
        """Take the turn lock, first come first served, unless ``signal`` fires first.

        Raises:
            StartAbortedError: ``signal`` fired before the lock was taken (nothing is held).
        """
        if signal.cancelled:
            raise StartAbortedError(SESSION_WAIT_ABORTED)
        lock = self.lock
        if not lock.locked():
            # No previous turn and no waiter (anyio's lock refuses a nowait acquire past a waiter): taken without
            # a cancel scope, a listener or a trip through the event loop, the warm-turn path.
            try:
                lock.acquire_nowait()
            except anyio.WouldBlock:
                pass
            else:
                return
        with anyio.CancelScope() as scope:
            remove = signal.add_listener(lambda _signal: scope.cancel())
            try:
                await lock.acquire()
            finally:
                remove()
        if scope.cancelled_caught:
            raise StartAbortedError(SESSION_WAIT_ABORTED)


class TurnLease:
    """What one turn borrows from its session (implements ``SessionLease`` and ``WorktreeLease``)."""

    def __init__(
        self,
        session: Session,
        *,
        fork_of: str | None,
        if_lost_new: bool,
        warm: WarmChild | None,
        worktrees: SessionWorktrees | None = None,
    ) -> None:
        self._session = session
        self._worktrees = worktrees
        self._fork_of = fork_of
        self._if_lost_new = if_lost_new
        self._warm = warm
        self.turn = session.record.turns + 1
        self.context_reset = False
        self.fork_refused = False
        """The handshake showed that the agent cannot fork (this turn's fork fails as ``SessionForkError``)."""

    @property
    def session_id(self) -> str:
        """The host-minted session id."""
        return self._session.id

    @property
    def warm(self) -> WarmChild | None:
        """The session's live child, lent to this turn."""
        return self._warm

    @property
    def agent_session_id(self) -> str | None:
        """The agent's session id to resume when there is no warm child."""
        return self._session.record.agent_session_id

    @property
    def fork_of(self) -> str | None:
        """The agent session id to fork from, for the first turn of a forked session."""
        return self._fork_of

    @property
    def if_lost_new(self) -> bool:
        """Whether a lost session may be replaced by a fresh one."""
        return self._if_lost_new

    @property
    def keep_warm(self) -> bool:
        """Whether the child stays alive after the turn."""
        return self._session.idle_ms > 0

    def advertised(self, capabilities: Iterable[SessionCapability]) -> None:
        """Record the session methods the agent advertised in this turn's handshake (in the session file)."""
        names = sorted(set(capabilities))
        self._session.record.capabilities = names
        self.fork_refused = self._fork_of is not None and "fork" not in names

    def opened(self, agent_session_id: str, *, context_reset: bool) -> None:
        """Record the agent session the handshake established."""
        self._session.record.agent_session_id = agent_session_id
        self.context_reset = self.context_reset or context_reset  # the table may have decided the reset already
        self._fork_of = None

    def keep(self, child: WarmChild) -> None:
        """The session owns ``child`` again."""
        self._session.warm = child

    async def worktree(self) -> Workspace | None:
        """The worktree this host holds for the session (after a removal under way has finished)."""
        return await self._worktrees.live(self._session.id) if self._worktrees is not None else None

    @property
    def saved_worktree(self) -> Workspace | None:
        """The session's worktree as its file describes it."""
        facts = self._session.record.worktree
        return workspace_of(self._session.id, facts) if facts is not None else None

    @property
    def fork_source_worktree(self) -> Workspace | None:
        """For a fork's first turn: the source session's worktree as the source's record describes it now (its
        branch holds the source's recorded turns); ``None`` for any other turn, or a source without a worktree."""
        source = self._session.fork_source
        if source is None or source.worktree is None or self._session.record.turns:
            return None
        return workspace_of(source.session_id, source.worktree)

    async def hold_worktree(self, workspace: Workspace) -> None:
        """The session owns ``workspace`` from now on (its file names it when this returns)."""
        if self._worktrees is None:
            raise RuntimeError("this session table keeps no worktrees")
        await self._worktrees.hold(self._session.record, workspace)
