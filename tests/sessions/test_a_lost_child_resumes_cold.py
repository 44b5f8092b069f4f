"""Cold resume (docs/behaviour.md#sessions): when a session's child is gone, the next call respawns it and uses
``session/resume`` if advertised, else ``session/load`` (the replay is drained and dropped), else the call fails
``resume`` / ``session-expired``; never a silent fresh session. ``if_lost: "new"`` starts one and says so."""

from __future__ import annotations

import os
import signal as signals
from pathlib import Path

import anyio
import pytest

from host import CancelController, Host, ToolResult
from host.tools._session_turns import CONTEXT_RESET_TEXT
from tests._provider_helpers import wait_until_gone
from tests.records._helpers import read_jsonl
from tests.sessions._helpers import (
    PROCESS_TIMEOUT_S,
    echo_of,
    session_config,
    session_entry,
    session_log,
    text_of,
)
from tests.snapshots import assert_snapshot

pytestmark = pytest.mark.anyio


async def _kill(pid: int) -> None:
    """SIGKILL the warm child and wait (bounded) until it is gone: the next turn must see it dead."""
    os.kill(pid, signals.SIGKILL)
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        await wait_until_gone(pid)


SESSION_EXPIRED = "Error: subagent-acp: Subagent failure (provider: ACP; stage: resume; category: session-expired)"


async def _kill_between_turns(
    tmp_path: Path, state: Path | None = None, **env: str
) -> tuple[ToolResult, ToolResult, list[str]]:
    """Turn one, SIGKILL its child, turn two on the same session: both results and the session log."""
    call_signal = CancelController().signal
    config = session_config(tmp_path, acp=session_entry(tmp_path, env=env))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            first = await host.execute("delegate_acp", {"task": "remember 42"}, signal=call_signal)
            await _kill(echo_of(first)[0])
            arguments = {"task": "what was it?", "session_id": first.to_json()["value"]["session_id"]}
            second = await host.execute("delegate_acp", arguments, signal=call_signal)
    return first, second, session_log(tmp_path)


async def test_a_killed_child_is_resumed_through_session_resume(tmp_path: Path) -> None:
    first, second, log = await _kill_between_turns(tmp_path, MOCK_SESSION_RESUME="1", MOCK_SESSION_LOAD="1")
    agent_session = log[0].split()[1]
    assert echo_of(second)[1] == ["remember 42", "what was it?"]
    assert echo_of(second)[0] != echo_of(first)[0]
    # resume is preferred over load when both are advertised
    assert log == [
        f"new {agent_session}",
        f"prompt {agent_session}",
        f"resume {agent_session}",
        f"prompt {agent_session}",
    ]


async def test_a_killed_child_is_resumed_through_session_load_and_the_replay_is_dropped(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _first, second, log = await _kill_between_turns(tmp_path, state, MOCK_SESSION_LOAD="1")
    agent_session = log[0].split()[1]
    assert log == [
        f"new {agent_session}",
        f"prompt {agent_session}",
        f"load {agent_session}",
        f"prompt {agent_session}",
    ]
    assert echo_of(second)[1] == ["remember 42", "what was it?"]
    assert "replayed" not in text_of(second)
    records = read_jsonl(state / "runs" / f"{second.to_json()['value']['run_id']}.jsonl")
    assert all("replayed" not in str(record) for record in records)


async def test_an_agent_with_neither_resume_nor_load_ends_session_expired(tmp_path: Path) -> None:
    _first, second, log = await _kill_between_turns(tmp_path)
    assert text_of(second) == SESSION_EXPIRED
    assert [line.split()[0] for line in log] == ["new", "prompt"]  # no fresh session/new behind the caller's back
    assert_snapshot("tools", "session_expired", second.to_json())


async def test_an_agent_that_refuses_the_resume_ends_session_expired(tmp_path: Path) -> None:
    # The agent forgot the session (no MOCK_SESSION_DIR, a new process): it answers session/resume with an error.
    call_signal = CancelController().signal
    entry = session_entry(tmp_path, MOCK_SESSION_RESUME="1")
    del entry["env"]["MOCK_SESSION_DIR"]
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(session_config(tmp_path, acp=entry), parent_cwd=str(tmp_path)) as host:
            first = await host.execute("delegate_acp", {"task": "one"}, signal=call_signal)
            await _kill(echo_of(first)[0])
            arguments = {"task": "two", "session_id": first.to_json()["value"]["session_id"]}
            second = await host.execute("delegate_acp", arguments, signal=call_signal)
    assert text_of(second) == SESSION_EXPIRED
    assert [line.split()[0] for line in session_log(tmp_path)] == ["new", "prompt", "resume"]


async def test_if_lost_new_starts_a_fresh_session_and_says_so(tmp_path: Path) -> None:
    call_signal = CancelController().signal
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(session_config(tmp_path), parent_cwd=str(tmp_path)) as host:
            first = await host.execute("delegate_acp", {"task": "one"}, signal=call_signal)
            session_id = first.to_json()["value"]["session_id"]
            await _kill(echo_of(first)[0])
            arguments = {"task": "two", "session_id": session_id, "if_lost": "new"}
            second = await host.execute("delegate_acp", arguments, signal=call_signal)
            third = await host.execute("delegate_acp", {"task": "three", "session_id": session_id}, signal=call_signal)
    value = second.to_json()["value"]
    assert value["context_reset"] is True and value["session_id"] == session_id
    assert text_of(second).startswith(CONTEXT_RESET_TEXT + "\n\n")
    assert echo_of(second)[1] == ["two"]
    # The fresh session is the session from now on: the next turn continues it, with no reset.
    assert "context_reset" not in third.to_json()["value"] and echo_of(third)[1] == ["two", "three"]
