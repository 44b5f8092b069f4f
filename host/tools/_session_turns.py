"""A delegation call as a turn of a session: wait for the session's previous turn, lend the run its session, and
end the turn once the run was disposed (foreground or as a background job alike).

``SessionTurn.start`` is what the delegation tool calls instead of ``provider.start``: it waits on the session's
FIFO lock (bounded by the request's signal), starts the run with the turn's lease, and returns the run wrapped so
its ``dispose`` ends the turn exactly once (the session records it and the next turn may start).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Final

import anyio

from host._exceptions import RunFailure, SessionWorkspaceError, SubagentHostError
from host.config import EntryConfig, WorkspaceMode
from host.run._after_dispose import AfterDisposeRun
from host.run._contracts import Provider, SubagentRequest, SubagentRun
from host.sessions import Session, SessionTable, TurnLease, fork_unsupported

__all__ = [
    "CONTEXT_RESET_TEXT",
    "OTHER_WORKSPACE",
    "SESSIONS_UNAVAILABLE",
    "SESSION_TEXT",
    "SessionArgs",
    "SessionTurn",
    "open_session_turn",
    "session_text",
]

SESSION_TEXT: Final = (
    "Every result carries a `session_id`: pass it back as `session_id` to continue the same conversation with the "
    "same child. {idle} A session is resumed from where it stopped when the agent supports it; if it cannot be, "
    'the call fails with "session-expired" (pass `if_lost: "new"` to start a fresh session instead, which the '
    "result marks `context_reset`). Sessions unused for {ttl_days} days expire."
)
"""The session paragraph of every delegation tool description (docs/behaviour.md#sessions)."""
_IDLE_WARM: Final = "The child stays alive for {idle} after a turn, so a follow-up within that time is fast."
_IDLE_ZERO: Final = "The child is stopped after each turn, so every follow-up resumes it."
OTHER_WORKSPACE: Final = 'session {session_id} works in workspace "{has}"; a later turn cannot switch it to "{asked}"'
"""A turn's explicit ``workspace`` differs from its session's (fixed by the session's first turn)."""
SESSIONS_UNAVAILABLE: Final = "sessions unavailable"
"""Raised by a call naming a session when the host keeps no session table."""

CONTEXT_RESET_TEXT: Final = (
    "[context reset: the session could not be resumed, so this answer comes from a fresh session that has none of "
    "the earlier turns]"
)
"""The one fixed line a result with ``context_reset: true`` starts with (docs/behaviour.md#sessions)."""


def session_text(entry: EntryConfig, ttl_days: int) -> str:
    """The session paragraph: the entry's idle time and the resume rules."""
    idle_ms = entry.session_idle_ms
    idle = _IDLE_ZERO if idle_ms == 0 else _IDLE_WARM.format(idle=_duration(idle_ms))
    return SESSION_TEXT.format(idle=idle, ttl_days=ttl_days)


def _duration(milliseconds: float) -> str:
    seconds = milliseconds / 1000
    if seconds >= 60 and seconds % 60 == 0:
        minutes = int(seconds // 60)
        return f"{minutes} minute" + ("" if minutes == 1 else "s")
    return f"{seconds:g} second" + ("" if seconds == 1 else "s")


@dataclasses.dataclass(frozen=True, slots=True)
class SessionArgs:
    """A delegation call's session arguments."""

    session_id: str | None
    fork_session_id: str | None
    if_lost_new: bool
    label: str | None
    workspace: WorkspaceMode | None


def open_session_turn(
    sessions: SessionTable | None,
    provider: Provider,
    entry: EntryConfig,
    request: SubagentRequest,
    args: SessionArgs,
    *,
    on_session: Callable[[str], None] | None,
) -> SessionTurn | None:
    """The call's turn: of the session it names, or of a new one (``None`` when the host keeps no sessions).

    Raises:
        SessionNotFoundError | SessionProviderError: the named session is unknown or another provider's.
        SessionForkError: the fork source's agent is known not to fork (a DSH SDK runtime never does).
        SessionWorkspaceError: the call's ``workspace`` differs from the named session's.
        SubagentHostError: a session was named and the host keeps no sessions.
    """
    if sessions is None:
        if args.session_id is not None or args.fork_session_id is not None:
            raise SubagentHostError(SESSIONS_UNAVAILABLE)
        return None
    idle_ms = entry.session_idle_ms
    session, fork_of = sessions.resolve(
        provider=provider.name,
        kind=provider.kind,
        idle_ms=idle_ms,
        session_id=args.session_id,
        fork_session_id=args.fork_session_id,
        cwd=entry.cwd if entry.cwd is not None else request.parent_cwd,
        label=args.label,
    )
    if on_session is not None:
        on_session(session.id)
    # The first turn fixes the session's workspace (a fork's: the source's, unless it asks); a later one inherits
    # it, and may not ask for the other.
    has = session.record.workspace
    if has is None:
        source = session.fork_source.workspace if session.fork_source is not None else None
        has = session.record.workspace = args.workspace or source or entry.workspace
    elif args.workspace is not None and args.workspace != has:
        raise SessionWorkspaceError(OTHER_WORKSPACE.format(session_id=session.id, has=has, asked=args.workspace))
    fork_source = args.fork_session_id
    return SessionTurn(
        sessions, session, idle_ms=idle_ms, fork_of=fork_of, if_lost_new=args.if_lost_new, fork_source=fork_source
    )


class SessionTurn:
    """One call's turn of ``session`` in ``table``."""

    def __init__(
        self,
        table: SessionTable,
        session: Session,
        *,
        idle_ms: float,
        fork_of: str | None,
        if_lost_new: bool,
        fork_source: str | None = None,
    ) -> None:
        self._table = table
        self.session: Final = session
        self._idle_ms = idle_ms
        self._fork_of = fork_of
        self._fork_source = fork_source
        self._if_lost_new = if_lost_new
        self.lease: TurnLease | None = None

    @property
    def workspace(self) -> WorkspaceMode:
        """Where the turn works: its session's workspace."""
        return self.session.record.workspace or "shared"

    @property
    def context_reset(self) -> bool:
        """Whether this turn had to start a fresh agent session (``if_lost: "new"``)."""
        return self.lease is not None and self.lease.context_reset

    async def start(self, provider: Provider, request: SubagentRequest) -> SubagentRun:
        """Wait for the session, then ``provider.start`` the turn's run with its lease.

        Raises:
            StartAbortedError: the request's signal fired while the previous turn ran.
            RunFailure: the session cannot be continued (``resume`` / ``session-expired``), or the start failed.
            SessionForkError: the fork's handshake showed that the agent cannot fork (its run is recorded as the
                failed start it was; no child is left).
        """
        lease = await self._table.begin_turn(
            self.session,
            signal=request.signal,
            idle_ms=self._idle_ms,
            fork_of=self._fork_of,
            if_lost_new=self._if_lost_new,
        )
        self.lease = lease
        try:
            run = await provider.start(dataclasses.replace(request, lease=lease, workspace=self.workspace))
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                await self._table.end_turn(self.session, lease, None)
            if lease.fork_refused and self._fork_source is not None and isinstance(exc, RunFailure):
                raise fork_unsupported(self._fork_source, self.session.record.provider) from exc
            raise
        return AfterDisposeRun(run, lambda: self._table.end_turn(self.session, lease, run.id))
