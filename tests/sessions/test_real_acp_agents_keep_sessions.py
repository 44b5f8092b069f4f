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
from tests.server._parent_helpers import closed_loopback_port
from tests.sessions._real_agents import (
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
_SETTINGS: Final = {"initialize_timeout_ms": 60000, "timeout_ms": 60000, "dispose_eof_grace_ms": 5000}


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
