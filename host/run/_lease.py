"""What a session lends one of its turns: the contract between ``host.sessions`` and a provider's run.

A turn is a run. Its session owns the child between turns; the run *borrows* it (``warm``) or opens one (a cold
resume or a new session), and at release either hands a live, settled child back (``keep``) or tears it down
itself, which leaves the session cold. The run layer knows only these protocols; ``host.sessions`` implements them
(docs/design.md#sessions-turns-and-workspaces-wave-3-design).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal, Protocol, runtime_checkable

from host.workspace import Workspace

__all__ = ["SessionLease", "WarmChild", "WorktreeLease"]


class WarmChild(Protocol):
    """A live child a session keeps between turns; only its session (or the session table) closes it."""

    @property
    def alive(self) -> bool:
        """Whether the child is still running and its connection open."""
        ...

    async def aclose(self) -> None:
        """Take the child down: a protocol goodbye when the agent advertises one (bounded), then the teardown
        ladder. Shielded and bounded; never raises."""
        ...


class SessionLease(Protocol):
    """One turn's view of its session. Every attribute is a host-side fact; nothing here reaches the model."""

    @property
    def session_id(self) -> str:
        """The host-minted session id."""
        ...

    @property
    def turn(self) -> int:
        """This turn's number in its session (1 for the first)."""
        ...

    @property
    def warm(self) -> WarmChild | None:
        """The live child the previous turn handed back, if the session is warm (the run checks its kind)."""
        ...

    @property
    def agent_session_id(self) -> str | None:
        """The agent's own session id to resume when the session is cold (``None``: a new session)."""
        ...

    @property
    def fork_of(self) -> str | None:
        """The agent's session id to fork a new session from (``None``: no fork)."""
        ...

    @property
    def if_lost_new(self) -> bool:
        """Whether a session that cannot be resumed may be replaced by a fresh one (``context_reset``)."""
        ...

    @property
    def keep_warm(self) -> bool:
        """Whether the child should stay alive after the turn (the entry's ``session_idle_ms`` is not 0)."""
        ...

    def advertised(self, capabilities: Iterable[Literal["resume", "load", "close", "fork"]]) -> None:
        """The run's handshake showed which session methods the agent offers (ACP ``initialize``)."""
        ...

    def opened(self, agent_session_id: str, *, context_reset: bool) -> None:
        """The run's handshake established (or resumed) the agent session ``agent_session_id``."""
        ...

    def keep(self, child: WarmChild) -> None:
        """Hand a live, settled child back to the session at the end of the turn (the session owns it now)."""
        ...


@runtime_checkable
class WorktreeLease(Protocol):
    """What a ``worktree`` turn borrows besides its child: the session's one worktree (docs/behaviour.md#workspaces).

    The session owns the worktree between turns, as it owns the warm child; a turn works in it and records its
    delta. Every attribute is a host-side fact.
    """

    @property
    def session_id(self) -> str:
        """The host-minted session id (the worktree's owner: branch ``subagent-host/<session_id>``)."""
        ...

    async def worktree(self) -> Workspace | None:
        """The worktree this host holds for the session (``None``: none yet, it was removed when the session went
        cold, or another host made it); waits for a removal under way to finish."""
        ...

    @property
    def saved_worktree(self) -> Workspace | None:
        """The session's worktree as its file describes it, to recreate (``None``: the session has none yet)."""
        ...

    @property
    def fork_source_worktree(self) -> Workspace | None:
        """For a fork's first turn: the source session's worktree as its facts describe it, to start from its work
        (``None``: not a fork's first turn, or the source has no worktree)."""
        ...

    async def hold_worktree(self, workspace: Workspace) -> None:
        """The session owns ``workspace`` from now on (its file names it when this returns; removed at its
        close)."""
        ...
