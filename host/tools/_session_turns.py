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

from host.diagnostics import SubagentResult
from host.run._contracts import Provider, SubagentRequest, SubagentRun
from host.sessions import Session, SessionTable, TurnLease
from host.stream import TranscriptEvent

__all__ = ["CONTEXT_RESET_TEXT", "SessionTurn"]

CONTEXT_RESET_TEXT: Final = (
    "[context reset: the session could not be resumed, so this answer comes from a fresh session that has none of "
    "the earlier turns]"
)
"""The one fixed line a result with ``context_reset: true`` starts with (docs/behaviour.md#sessions)."""


class SessionTurn:
    """One call's turn of ``session`` in ``table``."""

    def __init__(
        self, table: SessionTable, session: Session, *, idle_ms: float, fork_of: str | None, if_lost_new: bool
    ) -> None:
        self._table = table
        self.session: Final = session
        self._idle_ms = idle_ms
        self._fork_of = fork_of
        self._if_lost_new = if_lost_new
        self.lease: TurnLease | None = None

    @property
    def context_reset(self) -> bool:
        """Whether this turn had to start a fresh agent session (``if_lost: "new"``)."""
        return self.lease is not None and self.lease.context_reset

    async def start(self, provider: Provider, request: SubagentRequest) -> SubagentRun:
        """Wait for the session, then ``provider.start`` the turn's run with its lease.

        Raises:
            StartAbortedError: the request's signal fired while the previous turn ran.
            RunFailure: the session cannot be continued (``resume`` / ``session-expired``), or the start failed.
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
            run = await provider.start(dataclasses.replace(request, lease=lease))
        except BaseException:
            self._table.end_turn(self.session, lease, None)
            raise
        return _TurnRun(run, lambda: self._table.end_turn(self.session, lease, run.id))


class _TurnRun:
    """A run whose first ``dispose`` also ends its session turn."""

    def __init__(self, inner: SubagentRun, end: Callable[[], None]) -> None:
        self._inner = inner
        self._end: Callable[[], None] | None = end

    @property
    def id(self) -> str:
        return self._inner.id

    @property
    def transcript(self) -> tuple[TranscriptEvent, ...]:
        return self._inner.transcript

    async def result(self) -> SubagentResult:
        return await self._inner.result()

    async def dispose(self) -> None:
        try:
            await self._inner.dispose()
        finally:
            end, self._end = self._end, None
            if end is not None:
                end()
