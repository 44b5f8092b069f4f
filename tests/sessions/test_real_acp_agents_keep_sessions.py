"""Sessions on the wire with real ACP agents from npm: codex-acp and claude-agent-acp, each against a loopback fake
of its model API (``_real_agents.py``), through the public ``Host`` API and through ``serve`` with the official MCP
client.

Each agent must keep its context the way the host's contract says (docs/behaviour.md#sessions): a warm follow-up
reaches the same child, and the model's next request carries the earlier task and answer; a cancel mid-turn sends
``session/cancel``, the agent settles within ``dispose_eof_grace_ms`` and the same child serves the next turn;
``fork_session_id`` gives a new agent session whose first request carries the source's history; a cold resume, after
the child was killed and after the host closed (a new host on the same state directory), goes through
``session/resume`` and the model again sees the history; an agent whose own store is gone refuses the resume and the
call ends ``session-expired``, never a silent fresh session. The wire tap shows every host-to-agent method and which
process served it. Nothing survives (the suite's leak fixture), and the model API key never reaches a result, a
diagnostic or a record. A real agent's start costs seconds, so each test runs several turns in the order a parent
would meet them.
"""

from __future__ import annotations

import json
import os
import re
import signal
import uuid
from pathlib import Path
from typing import Any, Final

import anyio
import psutil
import pytest

from host import CancelController, Host, ToolResult
from host.config._loader import parse_config
from host.sessions import is_session_id
from tests.records._helpers import read_jsonl
from tests.server._helpers import client_session, write_config
from tests.server._parent_helpers import closed_loopback_port
from tests.sessions._real_agents import (
    DUMMY_KEY,
    MESSAGES,
    RESPONSES,
    STALL,
    ConversationApi,
    agent_entry,
    reply_for,
    tap_log,
)

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(240)]

AGENTS: Final = ["codex", "claude"]
# A real agent's start (Claude Code's first start in a fresh HOME takes ~10 s on a loaded 2-core box) and a turn.
_CALL_TIMEOUT_S: Final = 90
SESSION_EXPIRED: Final = (
    "Error: subagent-acp: Subagent failure (provider: ACP; stage: resume; category: session-expired)"
)
_OWN_TEXT: Final = re.compile(rf"(?:remember|and|then|fork|again|{STALL}) tok-[0-9a-f]{{12}}|reply-[0-9a-f]{{12}}")
# How long the host's event loop is given to run the exit and end-of-stream callbacks of a killed child.
_HOST_NOTICES_S: Final = 0.5
_SETTINGS: Final[dict[str, Any]] = {"initialize_timeout_ms": 60000, "timeout_ms": 60000, "dispose_eof_grace_ms": 5000}


def _api(agent: str) -> ConversationApi:
    return ConversationApi(RESPONSES if agent == "codex" else MESSAGES)


def _token() -> str:
    return f"tok-{uuid.uuid4().hex[:12]}"


def _value(result: ToolResult) -> dict[str, Any]:
    data = result.to_json()
    assert data["is_error"] is False, data
    return data["value"]


def _answer(result: ToolResult) -> str:
    return "".join(str(block.get("text", "")) for block in _value(result)["output"])


def _conversation(api: ConversationApi, token: str) -> list[str]:
    """The tasks and answers of this test in the first turn request whose last user message asked about ``token``.

    The agents' own context (an environment block, a system reminder, a notice) is dropped: only a task of this
    test (``<word> tok-<hex>``) and a fake model answer (``reply-<hex>``) are kept, in order.
    """
    # The turn's own request comes first; Claude Code may follow an answer with a side query that offers tools too
    # (a suggestion of the user's next prompt), which can quote the conversation.
    found = [turn for turn in api.turns() if token in turn[-1]]
    assert found, api.turns()
    return [match for text in found[0] for match in _OWN_TEXT.findall(text)]


async def _kill_child_group(pid: int) -> None:
    """SIGKILL the host's warm child (the tap) and its whole process group; wait until the host reaped it and saw
    its connection close.

    Only the host may reap its child (a ``waitpid`` here would take the exit status from it), so this only polls.
    The host learns of the exit and of the closed connection from callbacks of its event loop, after the reap: a
    call made in that instant would still find the child warm and fail ``process-exit`` (docs/behaviour.md,
    sessions: real agents), so the test gives the loop a moment as the fake-agent tests do.
    """
    os.killpg(os.getpgid(pid), signal.SIGKILL)
    with anyio.fail_after(_CALL_TIMEOUT_S):
        while True:
            if not psutil.pid_exists(pid):
                break
            await anyio.sleep(0.05)
    await anyio.sleep(_HOST_NOTICES_S)


def _records_by_turn(state: Path) -> dict[int, list[dict[str, Any]]]:
    turns = [read_jsonl(path) for path in (state / "runs").glob("*.jsonl")]
    return {next(r["data"]["turn"] for r in turn if r["type"] == "run/start"): turn for turn in turns}


def _assert_no_key(state: Path, *results: ToolResult) -> None:
    """The model API key reached no result (text, value or diagnostic) and no record or session file."""
    for result in results:
        assert DUMMY_KEY not in json.dumps(result.to_json())
    for path in state.rglob("*"):
        assert not path.is_file() or DUMMY_KEY not in path.read_text(errors="replace"), path


def _children(tmp_path: Path) -> list[list[tuple[str, str | None]]]:
    """The ``(method, sessionId)`` the host sent each child, one list per child in the order they started."""
    log = [entry for entry in tap_log(tmp_path) if "method" in entry]
    pids = list(dict.fromkeys(entry["tap"] for entry in log))
    return [[(entry["method"], entry["sessionId"]) for entry in log if entry["tap"] == pid] for pid in pids]


async def _call(host: Host, agent: str, arguments: dict[str, Any], signal: Any = None) -> ToolResult:
    with anyio.fail_after(_CALL_TIMEOUT_S):
        return await host.execute(f"delegate_{agent}", arguments, signal=signal or CancelController().signal)


@pytest.mark.parametrize("agent", AGENTS)
async def test_a_warm_session_keeps_its_context_across_a_follow_up_and_a_cancel_and_forks_with_it(
    tmp_path: Path, agent: str
) -> None:
    tokens = [_token() for _ in range(5)]
    api = _api(agent)
    state = tmp_path / "state"
    controller = CancelController()
    cancelled: ToolResult | None = None
    with api.serving(), closed_loopback_port() as port:
        config = parse_config({"providers": {agent: agent_entry(agent, tmp_path, api, port, **_SETTINGS)}})
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            first = await _call(host, agent, {"task": f"remember {tokens[0]}"})
            session_id = _value(first)["session_id"]
            second = await _call(host, agent, {"task": f"and {tokens[1]}", "session_id": session_id})
            async with anyio.create_task_group() as group:

                async def cancel_once_stalled() -> None:
                    # the stalled model request is in flight: the agent is mid-turn
                    await anyio.to_thread.run_sync(api.stalled.wait, _CALL_TIMEOUT_S, abandon_on_cancel=True)
                    controller.cancel()

                group.start_soon(cancel_once_stalled)
                arguments = {"task": f"{STALL} {tokens[2]}", "session_id": session_id}
                cancelled = await _call(host, agent, arguments, controller.signal)
            api.release()
            after = await _call(host, agent, {"task": f"then {tokens[3]}", "session_id": session_id})
            forked = await _call(host, agent, {"task": f"fork {tokens[4]}", "fork_session_id": session_id})

    assert [_value(result)["session_id"] for result in (second, after)] == [session_id, session_id]
    for token, result in zip(tokens, (first, second, None, after, forked), strict=True):
        assert result is None or reply_for(token) in _answer(result)
    # The warm follow-up: one child, one agent session; the model saw the first turn in the second request.
    source, fork_child = _children(tmp_path)
    agent_session = source[1][1] or source[2][1]
    assert source == [
        ("initialize", None),
        ("session/new", None),
        *[("session/prompt", agent_session)] * 3,
        ("session/cancel", agent_session),
        ("session/prompt", agent_session),
        ("session/close", agent_session),  # the host's close: the session stays resumable
    ]
    assert _conversation(api, tokens[1])[:2] == [f"remember {tokens[0]}", reply_for(tokens[0])]
    # The cancel: the turn ended aborted and was recorded interrupted; the agent kept the interrupted task.
    assert cancelled is not None
    assert cancelled.to_json()["content"][0]["text"].startswith("Error: subagent run was cancelled")
    by_turn = _records_by_turn(state)
    assert next(r["data"] for r in by_turn[3] if r["type"] == "run/end")["cause"] == "cancelled"
    # a partial answer (Codex streams a warning first) is recorded as interrupted
    assert all(r["data"]["interrupted"] is True for r in by_turn[3] if r["type"] == "assistant/message")
    after_history = _conversation(api, tokens[3])
    assert [text for text in after_history if "tok-" in text] == [
        f"remember {tokens[0]}",
        f"and {tokens[1]}",
        f"{STALL} {tokens[2]}",
        f"then {tokens[3]}",
    ]
    # The fork: a new child forks the source's agent session; its first request carries the source's history.
    assert _value(forked)["session_id"] != session_id
    assert fork_child[:2] == [("initialize", None), ("session/fork", agent_session)]
    assert fork_child[2][0] == "session/prompt" and fork_child[2][1] != agent_session
    assert reply_for(tokens[3]) in _conversation(api, tokens[4])
    _assert_no_key(state, first, second, cancelled, after, forked)


@pytest.mark.parametrize("agent", AGENTS)
async def test_a_killed_child_and_a_new_host_resume_the_session_and_an_agent_that_lost_it_ends_session_expired(
    tmp_path: Path, agent: str
) -> None:
    tokens = [_token() for _ in range(4)]
    api = _api(agent)
    state = tmp_path / "state"
    with api.serving(), closed_loopback_port() as port:
        config = parse_config({"providers": {agent: agent_entry(agent, tmp_path, api, port, **_SETTINGS)}})
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            first = await _call(host, agent, {"task": f"remember {tokens[0]}"})
            session_id = _value(first)["session_id"]
            await _kill_child_group(tap_log(tmp_path)[0]["tap"])  # the warm child crashed between turns
            second = await _call(host, agent, {"task": f"and {tokens[1]}", "session_id": session_id})
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            third = await _call(host, agent, {"task": f"then {tokens[2]}", "session_id": session_id})
        # The agent's own store is gone (another HOME): it cannot know the session any more.
        entry = agent_entry(agent, tmp_path, api, port, home="other-home", **_SETTINGS)
        async with Host.open(
            parse_config({"providers": {agent: entry}}), parent_cwd=str(tmp_path), state_dir=state
        ) as host:
            lost = await _call(host, agent, {"task": f"again {tokens[3]}", "session_id": session_id})

    for token, result in zip(tokens[1:3], (second, third), strict=True):
        assert reply_for(token) in _answer(result) and "context_reset" not in _value(result)
    _first_child, after_kill, new_host, refused = _children(tmp_path)
    agent_session = after_kill[1][1]
    for resumed in (after_kill, new_host):
        assert resumed[:3] == [
            ("initialize", None),
            ("session/resume", agent_session),
            ("session/prompt", agent_session),
        ]
    assert _conversation(api, tokens[1])[:2] == [f"remember {tokens[0]}", reply_for(tokens[0])]
    assert _conversation(api, tokens[2])[:4] == [
        f"remember {tokens[0]}",
        reply_for(tokens[0]),
        f"and {tokens[1]}",
        reply_for(tokens[1]),
    ]
    # the agent answered session/resume with an error; the host started no fresh session behind the caller's back
    assert lost.to_json()["content"] == [{"type": "text", "text": SESSION_EXPIRED}]
    assert refused[:2] == [("initialize", None), ("session/resume", agent_session)]
    assert "session/new" not in {method for method, _ in refused} and "session/prompt" not in {m for m, _ in refused}
    assert not any(tokens[3] in text for turn in api.turns() for text in turn)  # the model never saw that call
    _assert_no_key(state, first, second, third, lost)


@pytest.mark.parametrize("agent", AGENTS)
async def test_through_serve_the_official_client_continues_a_real_agents_session(tmp_path: Path, agent: str) -> None:
    first_token, second_token = _token(), _token()
    api = _api(agent)
    with api.serving(), closed_loopback_port() as port:
        config = write_config(tmp_path, {agent: agent_entry(agent, tmp_path, api, port, **_SETTINGS)})
        with anyio.fail_after(_CALL_TIMEOUT_S * 2):
            async with client_session(config) as session:
                first = await session.call_tool(f"delegate_{agent}", {"task": f"remember {first_token}"})
                assert first.structured_content is not None, first
                session_id = first.structured_content["session_id"]
                arguments = {"task": f"and {second_token}", "session_id": session_id}
                second = await session.call_tool(f"delegate_{agent}", arguments)
    assert is_session_id(session_id) and not first.is_error and not second.is_error, second
    assert second.structured_content is not None and second.structured_content["session_id"] == session_id
    assert reply_for(second_token) in json.dumps(second.structured_content["output"])
    (child,) = _children(tmp_path)  # one warm child served both calls
    assert [method for method, _ in child][:4] == ["initialize", "session/new", "session/prompt", "session/prompt"]
    assert _conversation(api, second_token)[:2] == [f"remember {first_token}", reply_for(first_token)]
    assert DUMMY_KEY not in json.dumps([first.model_dump(mode="json"), second.model_dump(mode="json")])
