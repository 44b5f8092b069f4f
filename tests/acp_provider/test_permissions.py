"""Unattended permission policy against the real fake agent (docs/behaviour.md#acp-acceptance,
#acp-permission-policy)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from host.acp_provider._run import start_acp_run
from host.cancel import CancelController
from tests.acp_provider._helpers import (
    PROCESS_TIMEOUT_S,
    agent_spec,
    json_lines,
    make_request,
    open_run,
    task_group,
    wait_for_file,
)

F_REMOTE_LIMIT = (
    "Subagent failure (provider: ACP; stage: prompt; category: remote-limit; stop reason: max_turn_requests)"
)


def p_line(policy: str, kind: str, decision: str) -> str:
    return f"ACP unattended decision (policy: {policy}; request: {kind}; decision: {decision})"


@pytest.mark.anyio
async def test_reject_policy_denies_and_the_agent_stops_cancelled(tmp_path: Path) -> None:
    spec = agent_spec(tmp_path, MOCK_PERMISSION="1", MOCK_TOOL_KIND="execute")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), spec) as run:
            result = await run.result()
    assert result.stop_reason == "aborted"
    assert result.diagnostic == p_line("reject", "execute", "denied")


@pytest.mark.anyio
async def test_allow_policy_selects_the_allow_option_and_completes_without_a_diagnostic(tmp_path: Path) -> None:
    log = tmp_path / "permission-log"
    spec = agent_spec(
        tmp_path, permission="allow", MOCK_PERMISSION="1", MOCK_TEXT="approved answer", MOCK_PERMISSION_LOG=str(log)
    )
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), spec) as run:
            result = await run.result()
    assert result.to_json() == {"output": [{"type": "text", "text": "approved answer"}], "stop_reason": "completed"}
    assert json_lines(log) == [{"outcome": "selected", "optionId": "yes"}]


@pytest.mark.anyio
async def test_allow_policy_without_an_allow_option_denies(tmp_path: Path) -> None:
    spec = agent_spec(tmp_path, permission="allow", MOCK_PERMISSION="1", MOCK_NO_ALLOW="1")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), spec) as run:
            result = await run.result()
    assert result.stop_reason == "aborted"
    assert result.diagnostic == p_line("allow", "unknown", "denied")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("policy", "kind", "expected"),
    [
        ("reject", "edit", p_line("reject", "edit", "denied")),
        ("allow", "execute", p_line("allow", "execute", "allowed")),
        ("allow", "future_kind", p_line("allow", "unknown", "allowed")),
    ],
)
async def test_a_remote_limit_diagnostic_carries_the_latest_decision_second(
    tmp_path: Path, policy: str, kind: str, expected: str
) -> None:
    spec = agent_spec(
        tmp_path,
        permission="allow" if policy == "allow" else "reject",
        MOCK_PERMISSION="1",
        MOCK_PERMISSION_IGNORE_DECISION="1",
        MOCK_TOOL_KIND=kind,
        MOCK_STOP="max_turn_requests",
    )
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), spec) as run:
            result = await run.result()
    assert result.stop_reason == "error"
    assert result.diagnostic == F_REMOTE_LIMIT + "\n" + expected


@pytest.mark.anyio
async def test_thought_chunks_never_reach_the_output(tmp_path: Path) -> None:
    spec = agent_spec(tmp_path, MOCK_THOUGHT="1", MOCK_TEXT="final answer")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), spec) as run:
            result = await run.result()
    assert result.to_json() == {"output": [{"type": "text", "text": "final answer"}], "stop_reason": "completed"}


@pytest.mark.anyio
async def test_permission_requests_after_a_local_cancel_are_answered_cancelled_and_not_recorded(
    tmp_path: Path,
) -> None:
    controller = CancelController()
    ready, log = tmp_path / "ready", tmp_path / "permission-log"
    spec = agent_spec(
        tmp_path,
        permission="allow",
        MOCK_HANG="1",
        MOCK_PERMISSION_ON_CANCEL="1",
        MOCK_PERMISSION_LOG=str(log),
        MOCK_READY_FILE=str(ready),
    )
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            run = await start_acp_run(make_request(controller.signal), spec, task_group=group)
            await wait_for_file(ready)
            controller.cancel()
            result = await run.result()
            await wait_for_file(log)
            await run.dispose()
    assert json_lines(log) == [{"outcome": "cancelled"}]
    assert result.to_json() == {"output": [{"type": "text", "text": "mock child answer"}], "stop_reason": "aborted"}
