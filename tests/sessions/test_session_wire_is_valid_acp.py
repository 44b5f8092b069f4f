"""The session methods the host sends (``session/resume``, ``load``, ``close``, ``fork``) and the fake agent's
answers validate against the official ACP schema, connection by connection (docs/behaviour.md#sessions)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio
import pytest
from anyio.abc import TaskGroup

from host.acp_provider._run import start_acp_run
from host.process import ProcessHandle
from host.run._lease import SessionLease
from host.sessions import Session, SessionRecord, TurnLease
from tests._provider_helpers import make_request, task_group
from tests.acp_conformance import WireRecorder, validate_conversation
from tests.acp_provider._helpers import agent_spec
from tests.acp_provider._seams import decorated_spawn, tee_wire
from tests.sessions._helpers import PROCESS_TIMEOUT_S

pytestmark = pytest.mark.anyio


class _PerConnectionWire:
    """A spawn seam recording each connection's two directions separately (request ids restart per connection)."""

    def __init__(self) -> None:
        self.connections: list[tuple[WireRecorder, WireRecorder]] = []

    async def __call__(
        self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str], task_group: TaskGroup, grace_ms: float
    ) -> ProcessHandle:
        client, agent = WireRecorder(), WireRecorder()
        self.connections.append((client, agent))
        return await decorated_spawn(tee_wire(client, agent))(
            argv, cwd=cwd, env=env, task_group=task_group, grace_ms=grace_ms
        )


def _session() -> Session:
    record = SessionRecord(session_id="s" * 32, provider="acp", kind="acp", created="t", last_used="t")
    return Session(record, idle_ms=60_000)


async def _turn(
    group: TaskGroup, lease: SessionLease, text: str, tmp_path: Path, wire: _PerConnectionWire, env: dict[str, str]
) -> None:
    spec = agent_spec(tmp_path, {"MOCK_SESSION_ECHO": "1", **env}, eof_grace_ms=500, grace_ms=500)
    request = dataclasses.replace(make_request(text=text), lease=lease)
    run = await start_acp_run(request, spec, task_group=group, spawn=wire)
    assert (await run.result()).stop_reason == "completed"
    await run.dispose()


def _lease(session: Session, fork_of: str | None = None) -> TurnLease:
    return TurnLease(session, fork_of=fork_of, if_lost_new=False, warm=None)


async def test_resume_load_close_and_fork_are_valid_acp_on_the_wire(tmp_path: Path) -> None:
    switches = {
        "MOCK_SESSION_RESUME": "1",
        "MOCK_SESSION_CLOSE": "1",
        "MOCK_SESSION_FORK": "1",
        "MOCK_SESSION_DIR": str(tmp_path),
    }
    wire = _PerConnectionWire()
    session, forked = _session(), _session()
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            # Turn 1 opens the session and keeps the child; going cold sends session/close before the ladder.
            await _turn(group, _lease(session), "one", tmp_path, wire, switches)
            assert session.warm is not None
            await session.warm.aclose()
            session.warm = None
            session.record.turns = 1
            # Turn 2 resumes it cold (session/resume); with idle 0 the turn says goodbye (session/close) itself.
            session.idle_ms = 0
            await _turn(group, _lease(session), "two", tmp_path, wire, switches)
            source = session.record.agent_session_id
            # A fork of it (session/fork).
            forked.idle_ms = 0
            await _turn(group, _lease(forked, source), "three", tmp_path, wire, switches)
            # An agent with load only (session/load, its replay before the answer).
            load = {"MOCK_SESSION_LOAD": "1", "MOCK_SESSION_DIR": str(tmp_path)}
            await _turn(group, _lease(session), "four", tmp_path, wire, load)
    methods = [
        [message.get("method") for message in client.messages if "method" in message]
        for client, _agent in wire.connections
    ]
    assert methods == [
        ["initialize", "session/new", "session/prompt", "session/close"],
        ["initialize", "session/resume", "session/prompt", "session/close"],
        ["initialize", "session/fork", "session/prompt", "session/close"],
        ["initialize", "session/load", "session/prompt"],
    ]
    for client, agent in wire.connections:
        validate_conversation(client.messages, agent.messages)
    assert forked.record.agent_session_id not in (None, source)
