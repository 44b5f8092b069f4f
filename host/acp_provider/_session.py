"""ACP sessions across turns: what the agent advertises, the session handshake (new, resume, load, fork) and the
warm child a session keeps between turns (docs/behaviour.md#sessions).

Cold resume order: ``session/resume`` when ``sessionCapabilities.resume`` is advertised, else ``session/load`` when
``loadSession`` is (the replayed updates arrive before the response, while the run is unpublished, so they reach no
output, stream or record; a ``null`` result is success). Otherwise, or when the agent answers with an error, the
session is lost: a fresh ``session/new`` only when the call allowed it (``if_lost: "new"``, ``context_reset``),
else the closed ``resume`` / ``session-expired`` failure. Never a silent fresh session.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

import anyio
import psutil

from host._exceptions import AcpConnectionClosed, AcpResponseError, SubagentHostError
from host._text import utf8_size
from host.acp_provider._connection import AcpConnection, PermissionPolicyFn, UpdateObserver
from host.acp_provider._spec import NO_SESSION_ID_MESSAGE, StartupFailure
from host.acp_provider._wire import as_object, cancelled_answer, session_id_of
from host.diagnostics import AcpFailureFacts, AcpStage
from host.jsonrpc import Outstanding
from host.process import read_proc_stat
from host.run._lease import SessionLease

__all__ = [
    "MAX_AGENT_SESSION_ID_BYTES",
    "SESSION_CLOSE_TIMEOUT_S",
    "SESSION_LOST_MESSAGE",
    "AcpWarmChild",
    "DetachedPrompt",
    "OpenedSession",
    "SessionSupport",
    "TurnSession",
    "open_session",
    "is_alive",
    "say_goodbye",
    "session_support_of",
]

logger = logging.getLogger(__name__)

SESSION_CLOSE_TIMEOUT_S: Final = 2.0
"""Bounds the ``session/close`` request before a warm child's teardown ladder."""
SESSION_LOST_MESSAGE: Final = "ACP agent could not resume the session"
"""Raw (host-only) cause of the ``resume; session-expired`` failure."""
FORK_UNSUPPORTED_MESSAGE: Final = "ACP agent does not advertise session/fork"
"""Raw (host-only) cause of a fork the agent does not offer."""
MAX_AGENT_SESSION_ID_BYTES: Final = 1024
"""The longest agent session id (UTF-8 bytes) a kept session accepts (real agents use ids of 30-40 bytes)."""
LONG_SESSION_ID_MESSAGE: Final = f"ACP agent's session id is over {MAX_AGENT_SESSION_ID_BYTES} bytes"
"""Raw (host-only) cause of the ``new-session; protocol`` failure of a session turn whose agent named its session so."""


@dataclass(frozen=True, slots=True)
class SessionSupport:
    """Which session methods the agent advertised in ``initialize`` (read leniently: present and not false)."""

    resume: bool = False
    load: bool = False
    close: bool = False
    fork: bool = False

    def names(self) -> list[Literal["resume", "load", "close", "fork"]]:
        """The advertised methods by name."""
        names: list[Literal["resume", "load", "close", "fork"]] = []
        if self.resume:
            names.append("resume")
        if self.load:
            names.append("load")
        if self.close:
            names.append("close")
        if self.fork:
            names.append("fork")
        return names


def _advertised(value: object) -> bool:
    return value is not None and value is not False


def session_support_of(initialize_result: object) -> SessionSupport:
    """The session methods an ``initialize`` result advertises; anything malformed advertises nothing."""
    result = as_object(initialize_result)
    capabilities = as_object(result.get("agentCapabilities")) if result is not None else None
    if capabilities is None:
        return SessionSupport()
    session = as_object(capabilities.get("sessionCapabilities"))
    return SessionSupport(
        resume=session is not None and _advertised(session.get("resume")),
        load=capabilities.get("loadSession") is True,
        close=session is not None and _advertised(session.get("close")),
        fork=session is not None and _advertised(session.get("fork")),
    )


@dataclass(frozen=True, slots=True)
class OpenedSession:
    """The agent session a handshake established."""

    session_id: str
    context_reset: bool = False


async def open_session(
    conn: AcpConnection, cwd: str, support: SessionSupport, lease: SessionLease | None
) -> OpenedSession | StartupFailure:
    """Establish the turn's agent session: new, forked, or resumed in the documented order.

    Raises:
        AcpConnectionClosed | AcpResponseError: ``session/new`` or ``session/fork`` failed (the caller classifies it).
    """
    resume_id = lease.agent_session_id if lease is not None else None
    fork_of = lease.fork_of if lease is not None else None
    if fork_of is not None:
        if not support.fork:
            return StartupFailure(
                "new-session", SubagentHostError(FORK_UNSUPPORTED_MESSAGE), AcpFailureFacts("new-session", "protocol")
            )
        return _created(await conn.fork_session(fork_of, cwd), kept=True)
    if resume_id is None:
        return _created(await conn.new_session(cwd), kept=lease is not None)
    lost: BaseException = SubagentHostError(SESSION_LOST_MESSAGE)
    try:
        if support.resume:
            await conn.resume_session(resume_id, cwd)
            return OpenedSession(resume_id)
        if support.load:
            await conn.load_session(resume_id, cwd)
            return OpenedSession(resume_id)
    except AcpResponseError as raw:
        lost = raw
    assert lease is not None
    if lease.if_lost_new:
        opened = _created(await conn.new_session(cwd), kept=True)
        if isinstance(opened, OpenedSession):
            return OpenedSession(opened.session_id, context_reset=True)
        return opened
    return StartupFailure("resume", lost, AcpFailureFacts("resume", "session-expired"))


def _created(result: object, *, kept: bool) -> OpenedSession | StartupFailure:
    """The session a ``session/new`` or ``session/fork`` result names; a session the host keeps (``kept``) needs an
    id of at most ``MAX_AGENT_SESSION_ID_BYTES``, since its file stores it and every later turn sends it back."""
    session_id = session_id_of(result)
    if session_id is None:
        return StartupFailure(
            "new-session", SubagentHostError(NO_SESSION_ID_MESSAGE), AcpFailureFacts("new-session", "protocol")
        )
    if kept and utf8_size(session_id) > MAX_AGENT_SESSION_ID_BYTES:
        return StartupFailure(
            "new-session", SubagentHostError(LONG_SESSION_ID_MESSAGE), AcpFailureFacts("new-session", "protocol")
        )
    return OpenedSession(session_id)


async def say_goodbye(conn: AcpConnection, agent_session_id: str | None, support: SessionSupport) -> None:
    """``session/close`` when the agent advertises it and the child is alive, bounded; failures are ignored."""
    if not support.close or agent_session_id is None or not is_alive(conn):
        return
    with anyio.move_on_after(SESSION_CLOSE_TIMEOUT_S, shield=True):
        try:
            await conn.close_session(agent_session_id)
        except (AcpConnectionClosed, AcpResponseError):
            pass


def is_alive(conn: AcpConnection) -> bool:
    """Whether the child still runs and its connection is open."""
    return conn.handle.outcome is None and not conn.child.peer.closed


def _process_runs(pid: int) -> bool:
    """``False`` once the child exited, reaped or not. A child of this process is asked with one ``waitid``
    (``WNOWAIT``: the reaping stays with its watcher) and, while that reports nothing, its ``/proc/<pid>/stat`` state
    (a killed multi-threaded child is a zombie before ``waitid`` reports it); a reaped one, or a pid that is not this
    process's child, through its ``/proc`` entry (a zombie counts as gone)."""
    try:
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return False
        # waitid reports a thread-group leader only once every thread has exited; a killed multi-threaded child
        # already shows as a zombie before that (a loaded machine can stretch the gap to many milliseconds).
        return not _shows_as_exited(pid)
    except ChildProcessError:
        pass
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def _shows_as_exited(pid: int) -> bool:
    """Whether ``/proc/<pid>/stat`` shows the process dead or a zombie (or no longer exists)."""
    line = read_proc_stat(pid)
    return line is None or line.rpartition(b")")[2][1:2] in (b"Z", b"X")


class DetachedPrompt:
    """A session turn's ``session/prompt``, left outstanding on the connection: a local cancel stops the turn's
    *wait*, not the request, so the release can still see the agent's ``cancelled`` answer and keep the session
    warm. The request stays pending until answered or until the connection ends (the ladder closes it), so it is
    bounded by the child's lifetime. The write is shielded, so a cancel never leaves half a line on the wire; a
    child that stopped reading is unblocked by the ladder, which closes the pipe."""

    def __init__(
        self,
        conn: AcpConnection,
        session_id: str,
        blocks: Sequence[Mapping[str, object]],
        on_response: Callable[[object], None],
    ) -> None:
        self._conn = conn
        self._session_id = session_id
        self._blocks = blocks
        self._on_response = on_response
        self._outstanding: Outstanding | None = None
        self._writing = False
        self._written: anyio.Event | None = None
        """Made only when the release waits while the write is still blocked (never on a turn's usual path)."""

    async def run(self) -> object:
        """Write the request, then wait for its answer (a cancellation point).

        Raises:
            AcpConnectionClosed | AcpResponseError: the request failed.
        """
        self._writing = True
        try:
            with anyio.CancelScope(shield=True):
                self._outstanding = await self._conn.send_prompt(
                    self._session_id, self._blocks, on_response=self._on_response
                )
        finally:
            self._writing = False
            if self._written is not None:
                self._written.set()
        outstanding = self._outstanding
        assert outstanding is not None
        return await self._conn.answer(outstanding)

    async def settled_within(self, timeout_ms: float) -> bool:
        """Wait (shielded, bounded) for the agent's answer; whether it answered on an open connection."""
        if self._outstanding is None or not self._outstanding.settled:
            with anyio.move_on_after(timeout_ms / 1000, shield=True):
                if self._writing:
                    self._written = anyio.Event()
                    await self._written.wait()
                if self._outstanding is not None:
                    with contextlib.suppress(AcpConnectionClosed, AcpResponseError):
                        await self._conn.answer(self._outstanding)
        outstanding = self._outstanding
        return outstanding is not None and outstanding.settled and not self._conn.child.peer.closed


def _drop_update(_update: Mapping[str, object]) -> None:
    """Between turns a warm child's updates belong to no run."""


def _refuse_permission(_params: Mapping[str, object]) -> dict[str, object]:
    return cancelled_answer()


class AcpWarmChild:
    """A live ACP child kept by its session between turns (``host.run._lease.WarmChild``)."""

    def __init__(self, conn: AcpConnection, agent_session_id: str, support: SessionSupport) -> None:
        self.conn: Final = conn
        self.agent_session_id: Final = agent_session_id
        self.support: Final = support

    @classmethod
    def park(cls, conn: AcpConnection, agent_session_id: str, support: SessionSupport) -> AcpWarmChild:
        """Detach ``conn`` from its turn (later updates are dropped, permission requests refused) and wrap it."""
        conn.bind(on_update=_drop_update, on_permission=_refuse_permission)
        return cls(conn, agent_session_id, support)

    @property
    def alive(self) -> bool:
        """Whether the child still runs and its connection is open. A child that died since its last turn reads as
        gone at once, even before the host read its EOF (its process state, usually one ``waitid``): the next turn
        then resumes it cold instead of prompting a dead child."""
        return is_alive(self.conn) and _process_runs(self.conn.handle.pid)

    async def aclose(self) -> None:
        """``session/close`` when advertised (bounded by ``SESSION_CLOSE_TIMEOUT_S``), then the ladder; never
        raises (a failed ladder is logged)."""
        with anyio.CancelScope(shield=True):
            await say_goodbye(self.conn, self.agent_session_id, self.support)
            try:
                await self.conn.aclose()
            except Exception:  # containment boundary: a session going cold never fails its caller
                logger.warning("subagent-host: tearing down a warm ACP child failed", exc_info=True)


class TurnSession:
    """One run's side of its session: borrow a warm child or open the agent session, prompt, and at release hand
    the child back (warm) or take it down (cold). Without a lease it is today's one-shot run: ``session/new``, an
    attached prompt, and the ladder at release."""

    def __init__(self, lease: SessionLease | None) -> None:
        self._lease = lease
        self._support = SessionSupport()
        self._detached: DetachedPrompt | None = None
        self.borrowed = False

    def borrow(self, *, on_update: UpdateObserver, on_permission: PermissionPolicyFn) -> AcpWarmChild | None:
        """The session's warm ACP child, now lent to this turn, its updates and permission requests routed to
        ``on_update`` and ``on_permission`` (``None``: the turn spawns its own)."""
        warm = self._lease.warm if self._lease is not None else None
        if not isinstance(warm, AcpWarmChild):
            return None
        self.borrowed, self._support = True, warm.support
        warm.conn.bind(on_update=on_update, on_permission=on_permission)
        return warm

    @property
    def open_stage(self) -> AcpStage:
        """The failure stage of the session request after ``initialize``: ``resume`` for a cold session."""
        lease = self._lease
        resuming = lease is not None and lease.agent_session_id is not None and lease.fork_of is None
        return "resume" if resuming else "new-session"

    async def open(self, conn: AcpConnection, cwd: str, initialized: object) -> OpenedSession | StartupFailure:
        """Read what ``initialize`` advertised, then establish the agent session (see :func:`open_session`).

        Raises:
            AcpConnectionClosed | AcpResponseError: a session request failed (the run classifies it).
        """
        self._support = session_support_of(initialized)
        if self._lease is not None:
            self._lease.advertised(self._support.names())
        opened = await open_session(conn, cwd, self._support, self._lease)
        if isinstance(opened, OpenedSession) and self._lease is not None:
            self._lease.opened(opened.session_id, context_reset=opened.context_reset)
        return opened

    async def prompt(
        self,
        conn: AcpConnection,
        session_id: str,
        blocks: Sequence[Mapping[str, object]],
        on_response: Callable[[object], None],
    ) -> object:
        """Send the turn's ``session/prompt``: attached for a one-shot run, detached for a session turn.

        Raises:
            AcpConnectionClosed | AcpResponseError: the request failed.
        """
        if self._lease is None:
            return await conn.prompt(session_id, blocks, on_response=on_response)
        self._detached = DetachedPrompt(conn, session_id, blocks, on_response)
        return await self._detached.run()

    async def release(
        self, conn: AcpConnection, session_id: str | None, *, published: bool, usable: bool, eof_grace_ms: float
    ) -> None:
        """Hand a live, settled child back to the session, or take it down (the session goes cold).

        Raises:
            Exception: the ladder failed (as ``ChildConnection.aclose``).
        """
        lease = self._lease
        if lease is None:
            await conn.aclose()
            return
        if (
            lease.keep_warm
            and session_id is not None
            and usable
            and await self._reusable(conn, published, eof_grace_ms)
        ):
            lease.keep(AcpWarmChild.park(conn, session_id, self._support))
            return
        await say_goodbye(conn, session_id, self._support)
        await conn.aclose()

    async def _reusable(self, conn: AcpConnection, published: bool, eof_grace_ms: float) -> bool:
        """Alive and done with this turn: a cancelled prompt gets up to ``eof_grace_ms`` to answer ``cancelled``."""
        if not published:
            return self.borrowed  # an aborted start never touched a borrowed child
        if self._detached is not None and not await self._detached.settled_within(eof_grace_ms):
            return False
        return is_alive(conn)
