"""``SessionTable``: the one place sessions are created, looked up, evicted and closed, with one reaper.

The reaper runs in the host's task group and applies the three time rules: a warm session idle for its entry's
``session_idle_ms`` goes cold; past ``max_warm_sessions`` live children the least recently used *idle* one goes
cold (a busy session is never evicted); a session unused for ``session_ttl_days`` is forgotten (its file removed).
Going cold is the child's own ``aclose`` (a protocol goodbye when advertised, then the ladder), run in the host's
task group; ``aclose`` takes every warm session cold and waits for every close, so no child outlives the table.
The session files stay, so a later host resumes them cold (docs/behaviour.md#sessions).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Final

import anyio
from anyio.abc import TaskGroup

from host._exceptions import SessionNotFoundError, SessionProviderError, StartAbortedError, SubagentHostError
from host.cancel import CancelSignal
from host.run._lease import WarmChild
from host.sessions._refusals import Kind, check_forkable, session_expired
from host.sessions._session import SESSION_WAIT_ABORTED, Session, TurnLease
from host.sessions._store import (
    SessionRecord,
    is_session_id,
    new_session_id,
    now,
    read_session_file,
    seconds_since,
)
from host.sessions._watch import CLOSE_CHECK_INTERVAL_S, honour_close, stamp_of
from host.sessions._worktrees import SessionWorktrees
from host.sessions._writes import SessionFileWriter
from host.workspace import Workspaces

__all__ = ["MAX_COLD_IN_MEMORY", "SESSION_WAIT_ABORTED", "SessionTable"]

UNKNOWN_SESSION: Final = "unknown session {session_id}"
OTHER_PROVIDER: Final = 'session {session_id} belongs to provider "{owner}", not "{provider}"'
_TTL_SWEEP_INTERVAL_S: Final = 86400.0
MAX_COLD_IN_MEMORY: Final = 1024
"""Without a state directory, how many cold sessions a host keeps resumable (the least recently used go first)."""


class SessionTable:
    """Every session of one host: in memory while used, on disk (``<state>/sessions/``) when a state dir is given."""

    def __init__(
        self,
        *,
        state_dir: Path | None,
        max_warm: int,
        ttl_days: int,
        task_group: TaskGroup,
        workspaces: Workspaces,
        persist_shared: bool = True,
    ) -> None:
        self._state_dir = state_dir
        self._persist_shared = persist_shared  # False: a shared-workspace session gets no file (a batch's items)
        self._max_warm = max_warm
        self.ttl_days: Final = ttl_days
        self._ttl_s = ttl_days * 86400.0
        self._task_group = task_group
        self._sessions: dict[str, Session] = {}
        self._wake = anyio.Event()
        self._reaper_wakes_at = float("inf")
        """When the sleeping reaper wakes by itself (``time.monotonic()``); ``inf`` until it first sleeps."""
        self._cooling = 0
        self._cooled = anyio.Event()
        self._closed = False
        self._reaper_scope = anyio.CancelScope()
        self._files = SessionFileWriter(state_dir)
        self._worktrees = SessionWorktrees(workspaces, task_group, persist=self._persist)

    def start(self) -> None:
        """Start the reaper in the host's task group (it sweeps expired session files first)."""
        self._task_group.start_soon(self._reap, name="session reaper")

    # -- lookup ---------------------------------------------------------------------------------------------------

    def resolve(
        self,
        *,
        provider: str,
        kind: Kind,
        idle_ms: float,
        session_id: str | None,
        fork_session_id: str | None,
        cwd: str | None,
        label: str | None,
    ) -> tuple[Session, str | None]:
        """The session a call continues (``session_id``), or a new one (forked from ``fork_session_id``).

        Returns:
            The session and, for a fork, the agent session id its first turn forks from.

        Raises:
            SessionNotFoundError: no session has that id (or it expired).
            SessionProviderError: the session belongs to another provider.
            SessionForkError: the fork source's agent cannot fork (``host.sessions._refusals``).
        """
        if session_id is not None:
            return self._lookup(session_id, provider), None
        fork_of, source = None, None
        if fork_session_id is not None:
            source = self._lookup(fork_session_id, provider).record
            check_forkable(source)
            fork_of = source.agent_session_id
            if fork_of is None:
                raise session_expired(kind)
        stamp = now()
        record = SessionRecord(
            session_id=new_session_id(),
            provider=provider,
            kind=kind,
            cwd=cwd,
            created=stamp,
            last_used=stamp,
            label=label,
            forked_from=fork_session_id,
        )
        session = Session(record, idle_ms, fork_source=source)  # a fork's worktree starts from the source's work
        self._sessions[session.id] = session
        return session, fork_of

    def _lookup(self, session_id: str, provider: str) -> Session:
        session = self._sessions.get(session_id)
        if session is not None:
            honour_close(self._state_dir, session)  # `sessions close` from another process refuses the call at once
        if session is None and self._state_dir is not None and is_session_id(session_id):
            stamp = stamp_of(self._state_dir, session_id)
            record = read_session_file(self._state_dir, session_id)
            if record is not None and seconds_since(record.last_used) <= self._ttl_s:
                if record.state == "warm":
                    record.state = "cold"  # its child belonged to a host that is gone
                session = Session(record, 0.0, file_stamp=stamp)
                self._sessions[session_id] = session
        if session is None:
            raise SessionNotFoundError(UNKNOWN_SESSION.format(session_id=session_id))
        if session.record.provider != provider:
            owner = session.record.provider
            raise SessionProviderError(OTHER_PROVIDER.format(session_id=session_id, owner=owner, provider=provider))
        return session

    # -- turns ----------------------------------------------------------------------------------------------------

    async def begin_turn(
        self, session: Session, *, signal: CancelSignal, idle_ms: float, fork_of: str | None, if_lost_new: bool
    ) -> TurnLease:
        """Wait for the session's previous turn (FIFO, bounded by ``signal``), then lend it to this turn.

        Raises:
            StartAbortedError: ``signal`` fired while waiting (the child was never touched).
            RunFailure: the session cannot be continued (``resume`` / ``session-expired``) and ``if_lost_new`` is off.
            SubagentHostError: the table is closed.
        """
        try:
            await session.take_turn(signal)
        except StartAbortedError:
            if session.record.turns == 0 and session.record.agent_session_id is None and self._unused_and_cold(session):
                self._sessions.pop(session.id, None)  # a new session aborted before its first turn: nothing to keep
            raise
        try:
            if self._closed:
                raise SubagentHostError("subagent host is closed")
            session.busy = True
            session.idle_ms = idle_ms
            warm, session.warm = session.warm, None
            if warm is not None and (not warm.alive or session.record.state == "closed"):
                self._cool_child(warm)
                warm = None
            lease = TurnLease(session, fork_of=fork_of, if_lost_new=if_lost_new, warm=warm, worktrees=self._worktrees)
            if warm is None and self._is_lost(session):
                if not if_lost_new:
                    raise session_expired(session.record.kind)
                session.record.agent_session_id = None
                session.record.state = "cold"
                lease.context_reset = True
            if warm is None:
                await self._make_room()  # this busy session counts: its child is about to be spawned
            return lease
        except BaseException:
            session.busy = False
            session.lock.release()
            raise

    @staticmethod
    def _is_lost(session: Session) -> bool:
        record = session.record
        if record.state == "closed":
            return True
        # A DSH SDK session is warm only; a session whose agent id never got recorded cannot be resumed either.
        return record.turns > 0 and (record.kind == "dsh-sdk" or record.agent_session_id is None)

    async def end_turn(self, session: Session, lease: TurnLease, run_id: str | None) -> None:
        """Record the turn (``run_id``: the run that served it, ``None`` when its start failed) and release the lock,
        the session file written first (``SessionFileWriter``: shielded, from a worker thread)."""
        record = session.record
        try:
            if run_id is not None:
                record.turns += 1
                record.runs.append(run_id)
            record.last_used = now()
            session.idle_since = time.monotonic()
            if record.state == "closed" or self._closed:
                if session.warm is not None:
                    self._cool_child(session.warm)
                    session.warm = None
            else:
                record.state = "warm" if session.warm is not None else "cold"
            if record.turns == 0 and record.agent_session_id is None and run_id is None:
                # A session that never opened anything is forgotten: there is nothing to continue.
                self._sessions.pop(session.id, None)
            else:
                await self._persist(record)
        finally:
            session.busy = False
            session.lock.release()
        self._worktrees.settle(session)
        await self._evict_over_bound()
        self._release_memory(session)
        self._wake_reaper_for(session)

    def _wake_reaper_for(self, session: Session) -> None:
        """Wake the reaper only when ``session``, now idle and warm, is due before the reaper wakes by itself."""
        if session.warm is None:
            return
        due = min(session.idle_since + session.idle_ms / 1000, time.monotonic() + CLOSE_CHECK_INTERVAL_S)
        if due < self._reaper_wakes_at:
            self._wake.set()

    # -- operator actions -----------------------------------------------------------------------------------------

    async def records(self) -> list[SessionRecord]:
        """Every known session, newest ``last_used`` first (memory overrides disk; the files are read off the loop)."""
        merged = {record.session_id: record for record in await self._files.read_all()}
        for session in self._sessions.values():
            honour_close(self._state_dir, session)  # a close by another process shows at once
            merged[session.id] = session.record
        return sorted(merged.values(), key=lambda record: record.last_used, reverse=True)

    async def close(self, session_id: str) -> SessionRecord:
        """Close a session: its warm child goes down, and a later call gets ``session-expired``; its file says so
        when this returns.

        Raises:
            SessionNotFoundError: no session has that id.
        """
        session = self._sessions.get(session_id)
        if session is None:
            record = read_session_file(self._state_dir, session_id) if self._state_dir is not None else None
            if record is None:
                raise SessionNotFoundError(UNKNOWN_SESSION.format(session_id=session_id))
            session = Session(record, 0.0)
            self._sessions[session_id] = session
        session.record.state = "closed"
        if session.warm is not None:
            self._cool_child(session.warm)
            session.warm = None
        self._worktrees.settle(session)
        await self._persist(session.record)
        self._release_memory(session)
        return session.record

    # -- the reaper -----------------------------------------------------------------------------------------------

    async def _reap(self) -> None:
        with self._reaper_scope:
            next_sweep = time.monotonic()
            while True:
                current = time.monotonic()
                if current >= next_sweep:
                    await self._sweep_expired()
                    next_sweep = current + _TTL_SWEEP_INTERVAL_S
                wake_at = next_sweep
                for session in list(self._sessions.values()):
                    if session.busy or session.warm is None:  # a busy one is polled: its turn's end wakes nothing
                        wake_at = min(wake_at, current + CLOSE_CHECK_INTERVAL_S) if session.busy else wake_at
                        continue
                    due = session.idle_since + session.idle_ms / 1000
                    if due <= current or honour_close(self._state_dir, session):
                        await self._go_cold(session)
                    else:
                        wake_at = min(wake_at, due, current + CLOSE_CHECK_INTERVAL_S)
                self._reaper_wakes_at = wake_at
                with anyio.move_on_after(max(0.0, wake_at - current)):
                    await self._wake.wait()
                if self._wake.is_set():
                    self._wake = anyio.Event()

    async def _sweep_expired(self) -> None:
        for record in await self._files.read_all():
            session = self._sessions.get(record.session_id)  # what memory holds is newer than what was read
            if seconds_since((session.record if session is not None else record).last_used) > self._ttl_s:
                if session is not None and (session.busy or session.warm is not None):
                    continue
                self._sessions.pop(record.session_id, None)
                self._worktrees.close_soon(record)
                await self._files.delete(record.session_id)

    async def _make_room(self) -> None:
        """Take least recently used idle sessions cold until the live children fit the bound; wait for their close."""
        victims: list[tuple[WarmChild, SessionRecord]] = []
        while self._live_children() > self._max_warm:
            session = self._least_recently_used_idle()
            if session is None:
                break
            assert session.warm is not None
            victims.append((session.warm, session.record))
            session.warm = None
            session.record.state = "cold"
            self._worktrees.settle(session)
        if victims:
            with anyio.CancelScope(shield=True):
                async with anyio.create_task_group() as group:
                    for child, record in victims:
                        group.start_soon(child.aclose)
                        group.start_soon(self._persist, record)

    async def _evict_over_bound(self) -> None:
        while self._live_children() > self._max_warm:
            session = self._least_recently_used_idle()
            if session is None:
                return
            await self._go_cold(session)

    def _live_children(self) -> int:
        return sum(1 for session in self._sessions.values() if session.busy or session.warm is not None)

    def _least_recently_used_idle(self) -> Session | None:
        idle = [session for session in self._sessions.values() if session.warm is not None and not session.busy]
        return min(idle, key=lambda session: session.idle_since) if idle else None

    async def _go_cold(self, session: Session) -> None:
        """The child's close starts at once; the session leaves memory only once its file says ``cold``."""
        child, session.warm = session.warm, None
        if session.record.state != "closed":
            session.record.state = "cold"
        if child is not None:
            self._cool_child(child)
        await self._persist(session.record)
        self._worktrees.settle(session)
        self._release_memory(session)

    def _release_memory(self, session: Session) -> None:
        """Keep memory flat over many sessions: a cold, unused session leaves the table (its file holds it, and a
        later call reloads it); without a state directory at most ``MAX_COLD_IN_MEMORY`` cold sessions are kept,
        the least recently used forgotten first."""
        if not self._unused_and_cold(session):
            return
        if self._state_dir is not None:
            self._sessions.pop(session.id, None)
            return
        cold = [kept for kept in self._sessions.values() if self._unused_and_cold(kept)]
        for forgotten in sorted(cold, key=lambda kept: kept.idle_since)[: max(0, len(cold) - MAX_COLD_IN_MEMORY)]:
            self._sessions.pop(forgotten.id, None)

    @staticmethod
    def _unused_and_cold(session: Session) -> bool:
        lock = session.lock
        return not session.busy and session.warm is None and not lock.locked() and not lock.statistics().tasks_waiting

    def _cool_child(self, child: WarmChild) -> None:
        self._cooling += 1
        if self._cooling == 1:
            self._cooled = anyio.Event()
        self._task_group.start_soon(self._cool, child, name="session going cold")

    async def _cool(self, child: WarmChild) -> None:
        try:
            await child.aclose()
        finally:
            self._cooling -= 1
            if self._cooling == 0:
                self._cooled.set()

    async def aclose(self) -> None:
        """Take every warm session cold (children closed concurrently, each bounded) and stop the reaper."""
        self._closed = True
        self._reaper_scope.cancel()
        with anyio.CancelScope(shield=True):
            for session in list(self._sessions.values()):
                if session.warm is not None:
                    await self._go_cold(session)
            if self._cooling:
                await self._cooled.wait()
            await self._worktrees.aclose()  # after the children: none of them works in a worktree any more

    # -- files ----------------------------------------------------------------------------------------------------

    async def _persist(self, record: SessionRecord) -> None:
        """Write the file of ``record`` (``SessionFileWriter``: off the loop, in order, never over another
        process's close), unless it is a shared-workspace session of a table that keeps none."""
        if self._persist_shared or record.workspace == "worktree":
            await self._files.write(record, self._sessions.get(record.session_id))
