"""Exact ``SubagentResult`` JSON of every ACP scenario with a deterministic model-visible result.

Compared with ``snapshots/acp/<scenario>.json`` through ``tests.snapshots.assert_snapshot`` (``UPDATE_SNAPSHOTS=1``
rewrites them).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from host.acp_provider._run import start_acp_run
from host.cancel import CancelController
from tests.acp_provider._helpers import PROCESS_TIMEOUT_S, agent_spec, make_request, task_group, wait_for_file
from tests.acp_provider._seams import close_protocol_on_prompt, decorated_spawn
from tests.snapshots import assert_snapshot

_PERMISSION_IGNORED = {"MOCK_PERMISSION": "1", "MOCK_PERMISSION_IGNORE_DECISION": "1"}

SCENARIOS: dict[str, tuple[str, dict[str, str]]] = {
    "completed-text": ("reject", {"MOCK_TEXT": "hello from acp child", "MOCK_SESSION_ID": "acp-child-session"}),
    "max-tokens": ("reject", {"MOCK_STOP": "max_tokens"}),
    "refusal-empty": ("reject", {"MOCK_TEXT": "", "MOCK_STOP": "refusal"}),
    "max-tokens-with-denial": ("reject", {**_PERMISSION_IGNORED, "MOCK_TOOL_KIND": "read", "MOCK_STOP": "max_tokens"}),
    "refusal-with-denial": ("reject", {**_PERMISSION_IGNORED, "MOCK_TOOL_KIND": "read", "MOCK_STOP": "refusal"}),
    "remote-cancelled": ("reject", {"MOCK_STOP": "cancelled"}),
    "remote-limit": ("reject", {"MOCK_TEXT": "partial", "MOCK_STOP": "max_turn_requests"}),
    "unknown-stop-reason": ("reject", {"MOCK_STOP": "private/path/SECRET_TOKEN"}),
    "missing-stop-reason": ("reject", {"MOCK_OMIT_STOP": "1"}),
    "permission-reject": ("reject", {"MOCK_PERMISSION": "1", "MOCK_TOOL_KIND": "execute"}),
    "permission-allow": ("allow", {"MOCK_PERMISSION": "1", "MOCK_TEXT": "approved answer"}),
    "permission-allow-no-option": ("allow", {"MOCK_PERMISSION": "1", "MOCK_NO_ALLOW": "1"}),
    "remote-limit-with-denial": (
        "reject",
        {**_PERMISSION_IGNORED, "MOCK_TOOL_KIND": "edit", "MOCK_STOP": "max_turn_requests"},
    ),
    "remote-limit-with-allowance": (
        "allow",
        {**_PERMISSION_IGNORED, "MOCK_TOOL_KIND": "execute", "MOCK_STOP": "max_turn_requests"},
    ),
    "remote-limit-with-unknown-kind": (
        "allow",
        {**_PERMISSION_IGNORED, "MOCK_TOOL_KIND": "future_kind", "MOCK_STOP": "max_turn_requests"},
    ),
    "thought-then-answer": ("reject", {"MOCK_THOUGHT": "1", "MOCK_TEXT": "final answer"}),
    "crash-after-chunk": ("reject", {"MOCK_TEXT": "partial answer", "MOCK_CRASH_AFTER_CHUNK": "1"}),
    "crash-on-prompt": ("reject", {"MOCK_CRASH_ON_PROMPT": "1"}),
    "probe-fs-read": ("reject", {"MOCK_PROBE_REQUEST": "fs/read_text_file"}),
    "extra-updates": ("reject", {"MOCK_EXTRA_UPDATES": "1", "MOCK_TEXT": "ok"}),
    "late-chunk": ("reject", {"MOCK_LATE_TEXT": "late"}),
}


@pytest.mark.anyio
@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_result_matches_its_snapshot(tmp_path: Path, name: str) -> None:
    policy, env = SCENARIOS[name]
    spec = agent_spec(tmp_path, env, permission="allow" if policy == "allow" else "reject")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            run = await start_acp_run(make_request(), spec, task_group=group)
            result = await run.result()
            await run.dispose()
    assert_snapshot("acp", name, result.to_json())


@pytest.mark.anyio
async def test_cancelled_run_matches_its_snapshot(tmp_path: Path) -> None:
    controller = CancelController()
    ready = tmp_path / "ready"
    spec = agent_spec(tmp_path, MOCK_HANG="1", MOCK_READY_FILE=str(ready))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            run = await start_acp_run(make_request(controller.signal), spec, task_group=group)
            await wait_for_file(ready)
            controller.cancel()
            result = await run.result()
            await run.dispose()
    assert_snapshot("acp", "local-cancel", result.to_json())


@pytest.mark.anyio
async def test_protocol_cut_on_prompt_matches_its_snapshot(tmp_path: Path) -> None:
    spec = agent_spec(tmp_path, eof_grace_ms=100, grace_ms=100, MOCK_HANG="1")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            request = make_request(text="private prompt text")
            run = await start_acp_run(
                request, spec, task_group=group, spawn=decorated_spawn(close_protocol_on_prompt())
            )
            result = await run.result()
            await run.dispose()
    assert_snapshot("acp", "prompt-transport", result.to_json())
