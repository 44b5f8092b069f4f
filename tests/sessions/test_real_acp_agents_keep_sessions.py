"""Sessions on the wire with real ACP agents from npm: codex-acp and claude-agent-acp, each against a loopback fake
of its model API (``_real_agents.py``), through the public ``Host`` API.

Each agent must keep its context the way the host's contract says (docs/behaviour.md#sessions): a warm follow-up
reaches the same child, and the model's next request carries the earlier task and answer; a cold resume after the
host closed (a new host on the same state directory) goes through ``session/resume`` and the model again sees the
history; ``fork_session_id`` gives a new agent session whose first request carries the source's history; a cancel
mid-turn sends ``session/cancel``, the agent settles within ``dispose_eof_grace_ms`` and the same child serves the
next turn. The wire tap shows every host-to-agent method and which process served it. Nothing survives (the suite's
leak fixture), and the model API key never reaches a result, a diagnostic or a record.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any, Final

import anyio
import pytest

from host import CancelController, Host, ToolResult
from host.config._loader import parse_config
from tests.records._helpers import read_jsonl
from tests.server._parent_helpers import closed_loopback_port
from tests.sessions._real_agents import (
    DUMMY_KEY,
    STALL,
    ConversationApi,
    MessagesConversation,
    ResponsesConversation,
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
_SETTINGS: Final[dict[str, Any]] = {"initialize_timeout_ms": 60000, "timeout_ms": 60000, "dispose_eof_grace_ms": 5000}


def _api(agent: str) -> ConversationApi:
    return ResponsesConversation() if agent == "codex" else MessagesConversation()


def _token() -> str:
    return f"tok-{uuid.uuid4().hex[:12]}"


def _value(result: ToolResult) -> dict[str, Any]:
    data = result.to_json()
    assert data["is_error"] is False, data
    return data["value"]


def _answer(result: ToolResult) -> str:
    return "".join(str(block.get("text", "")) for block in _value(result)["output"])


def _request_for(api: ConversationApi, token: str) -> str:
    """The conversation of the (one) turn request whose last user message asked about ``token``."""
    found = [turn for turn in api.turns() if token in turn[-1]]
    assert len(found) == 1, api.turns()
    return json.dumps(found[0])


def _assert_no_key(state: Path, *results: ToolResult) -> None:
    """The model API key reached no result (text, value or diagnostic) and no record or session file."""
    for result in results:
        assert DUMMY_KEY not in json.dumps(result.to_json())
    for path in state.rglob("*"):
        assert not path.is_file() or DUMMY_KEY not in path.read_text(errors="replace"), path


def _methods(tmp_path: Path) -> list[str]:
    return [entry["method"] for entry in tap_log(tmp_path) if "method" in entry]


async def _call(host: Host, agent: str, arguments: dict[str, Any], signal: Any = None) -> ToolResult:
    with anyio.fail_after(_CALL_TIMEOUT_S):
        return await host.execute(f"delegate_{agent}", arguments, signal=signal or CancelController().signal)


@pytest.mark.parametrize("agent", AGENTS)
async def test_a_warm_follow_up_reaches_the_same_child_with_the_context_kept(tmp_path: Path, agent: str) -> None:
    first_token, second_token = _token(), _token()
    api = _api(agent)
    with api.serving(), closed_loopback_port() as port:
        config = parse_config({"providers": {agent: agent_entry(agent, tmp_path, api, port, **_SETTINGS)}})
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=tmp_path / "state") as host:
            first = await _call(host, agent, {"task": f"remember {first_token}"})
            session_id = _value(first)["session_id"]
            second = await _call(host, agent, {"task": f"and {second_token}", "session_id": session_id})
    assert reply_for(first_token) in _answer(first) and reply_for(second_token) in _answer(second)
    assert _value(second)["session_id"] == session_id
    # one child (one tap process, one initialize, one session/new) served both turns on one agent session
    log = tap_log(tmp_path)
    assert len({entry["tap"] for entry in log}) == 1, log
    prompts = [entry["sessionId"] for entry in log if entry.get("method") == "session/prompt"]
    assert _methods(tmp_path)[:2] == ["initialize", "session/new"] and len(prompts) == 2 and len(set(prompts)) == 1
    history = _request_for(api, second_token)
    assert f"remember {first_token}" in history and reply_for(first_token) in history
    _assert_no_key(tmp_path / "state", first, second)


@pytest.mark.parametrize("agent", AGENTS)
async def test_a_new_host_resumes_the_session_through_session_resume_with_the_history(
    tmp_path: Path, agent: str
) -> None:
    first_token, second_token = _token(), _token()
    api = _api(agent)
    state = tmp_path / "state"
    with api.serving(), closed_loopback_port() as port:
        config = parse_config({"providers": {agent: agent_entry(agent, tmp_path, api, port, **_SETTINGS)}})
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            first = await _call(host, agent, {"task": f"remember {first_token}"})
        session_id = _value(first)["session_id"]
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            second = await _call(host, agent, {"task": f"and {second_token}", "session_id": session_id})
    assert reply_for(second_token) in _answer(second) and "context_reset" not in _value(second)
    log = tap_log(tmp_path)
    children = list(dict.fromkeys(entry["tap"] for entry in log))
    assert len(children) == 2, log  # the host's close ended the first child; the new host started another
    agent_session = next(entry["sessionId"] for entry in log if entry.get("method") == "session/prompt")
    resumed = [(entry["method"], entry["sessionId"]) for entry in log if entry["tap"] == children[1]]
    assert resumed[:3] == [("initialize", None), ("session/resume", agent_session), ("session/prompt", agent_session)]
    history = _request_for(api, second_token)
    assert f"remember {first_token}" in history and reply_for(first_token) in history


@pytest.mark.parametrize("agent", AGENTS)
async def test_a_fork_starts_a_new_session_with_the_sources_history(tmp_path: Path, agent: str) -> None:
    first_token, fork_token, source_token = _token(), _token(), _token()
    api = _api(agent)
    with api.serving(), closed_loopback_port() as port:
        config = parse_config({"providers": {agent: agent_entry(agent, tmp_path, api, port, **_SETTINGS)}})
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=tmp_path / "state") as host:
            first = await _call(host, agent, {"task": f"remember {first_token}"})
            source_id = _value(first)["session_id"]
            forked = await _call(host, agent, {"task": f"fork {fork_token}", "fork_session_id": source_id})
            source = await _call(host, agent, {"task": f"source {source_token}", "session_id": source_id})
    assert _value(forked)["session_id"] != source_id and reply_for(fork_token) in _answer(forked)
    log = tap_log(tmp_path)
    agent_source = next(entry["sessionId"] for entry in log if entry.get("method") == "session/prompt")
    forks = [entry for entry in log if entry.get("method") == "session/fork"]
    assert [entry["sessionId"] for entry in forks] == [agent_source], log
    fork_prompts = {e["sessionId"] for e in log if e.get("method") == "session/prompt"} - {agent_source}
    assert len(fork_prompts) == 1, log  # the fork's turn ran on a new agent session
    fork_history = _request_for(api, fork_token)
    assert f"remember {first_token}" in fork_history and reply_for(first_token) in fork_history
    # the source goes on without the fork's turn
    source_history = _request_for(api, source_token)
    assert f"remember {first_token}" in source_history and fork_token not in source_history
    assert reply_for(source_token) in _answer(source)


@pytest.mark.parametrize("agent", AGENTS)
async def test_a_cancel_mid_turn_keeps_the_session_on_the_same_child(tmp_path: Path, agent: str) -> None:
    first_token, stalled_token, next_token = _token(), _token(), _token()
    api = _api(agent)
    state = tmp_path / "state"
    controller = CancelController()
    with api.serving(), closed_loopback_port() as port:
        config = parse_config({"providers": {agent: agent_entry(agent, tmp_path, api, port, **_SETTINGS)}})
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            first = await _call(host, agent, {"task": f"remember {first_token}"})
            session_id = _value(first)["session_id"]
            cancelled: ToolResult | None = None
            async with anyio.create_task_group() as group:

                async def cancel_once_stalled() -> None:
                    # the stalled model request is in flight: the agent is mid-turn
                    await anyio.to_thread.run_sync(api.stalled.wait, _CALL_TIMEOUT_S, abandon_on_cancel=True)
                    controller.cancel()

                group.start_soon(cancel_once_stalled)
                arguments = {"task": f"{STALL} {stalled_token}", "session_id": session_id}
                cancelled = await _call(host, agent, arguments, controller.signal)
            api.release()
            after = await _call(host, agent, {"task": f"then {next_token}", "session_id": session_id})
    assert cancelled is not None
    assert cancelled.to_json()["content"][0]["text"].startswith("Error: subagent run was cancelled")
    assert reply_for(next_token) in _answer(after)
    records = {path: read_jsonl(path) for path in (state / "runs").glob("*.jsonl")}
    by_turn = {next(r["data"]["turn"] for r in turn if r["type"] == "run/start"): turn for turn in records.values()}
    assert next(r["data"] for r in by_turn[2] if r["type"] == "run/end")["cause"] == "cancelled"
    # a partial answer (Codex streams a warning first) is recorded as interrupted
    assert all(r["data"]["interrupted"] is True for r in by_turn[2] if r["type"] == "assistant/message")
    log = tap_log(tmp_path)
    assert len({entry["tap"] for entry in log}) == 1, log  # the same child served the turn after the cancel
    assert _methods(tmp_path) == [
        "initialize",
        "session/new",
        "session/prompt",
        "session/prompt",
        "session/cancel",
        "session/prompt",
        "session/close",  # the host's close: the session stays resumable
    ]
    history = _request_for(api, next_token)
    assert f"remember {first_token}" in history and reply_for(first_token) in history
    _assert_no_key(state, first, cancelled, after)
    assert f"{STALL} {stalled_token}" in history  # both agents keep the interrupted task in their history


@pytest.mark.parametrize("agent", AGENTS)
async def test_an_agent_that_lost_the_session_ends_session_expired_never_a_silent_fresh_start(
    tmp_path: Path, agent: str
) -> None:
    api = _api(agent)
    state = tmp_path / "state"
    with api.serving(), closed_loopback_port() as port:
        config = parse_config({"providers": {agent: agent_entry(agent, tmp_path, api, port, **_SETTINGS)}})
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            first = await _call(host, agent, {"task": f"remember {_token()}"})
        session_id = _value(first)["session_id"]
        # The agent's own store is gone (a new HOME): it cannot know the session any more.
        entry = agent_entry(agent, tmp_path, api, port, home="other-home", **_SETTINGS)
        config = parse_config({"providers": {agent: entry}})
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            lost = await _call(host, agent, {"task": f"and {_token()}", "session_id": session_id})
    assert lost.to_json()["content"] == [{"type": "text", "text": SESSION_EXPIRED}]
    # the agent answered session/resume with an error; the host started no fresh session behind the caller's back
    assert _methods(tmp_path)[-2:] == ["initialize", "session/resume"]
    assert len(api.turns()) == 1
    _assert_no_key(state, first, lost)
