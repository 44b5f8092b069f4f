"""Published runs against the real fake agent: results, stop reasons and permission lines
(docs/behaviour.md#acp-acceptance)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from host.acp_provider._run import start_acp_run
from tests.acp_provider._helpers import PROCESS_TIMEOUT_S, agent_spec, make_request, open_run, task_group
from tests.acp_provider._seams import decorated_spawn, tap_bounded_exit_wait

P_REJECT_READ = "ACP unattended decision (policy: reject; request: read; decision: denied)"
F_REMOTE_LIMIT = (
    "Subagent failure (provider: ACP; stage: prompt; category: remote-limit; stop reason: max_turn_requests)"
)
F_UNKNOWN_STOP = "Subagent failure (provider: ACP; stage: prompt; category: unknown; stop reason: unknown)"


@pytest.mark.anyio
async def test_completed_run_has_a_host_id_the_text_and_one_shared_teardown(tmp_path: Path) -> None:
    waits: list[float] = []
    spec = agent_spec(tmp_path, MOCK_TEXT="hello from acp child", MOCK_SESSION_ID="acp-child-session")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            spawn = decorated_spawn(tap_bounded_exit_wait(waits))
            run = await start_acp_run(make_request(), spec, task_group=group, spawn=spawn)
            result = await run.result()
            async with anyio.create_task_group() as both:
                both.start_soon(run.dispose)
                both.start_soon(run.dispose)
            await run.dispose()
            other = await start_acp_run(make_request(), spec, task_group=group)
            await other.dispose()
    assert run.id != "acp-child-session"
    assert result.to_json() == {
        "output": [{"type": "text", "text": "hello from acp child"}],
        "stop_reason": "completed",
    }
    assert len(waits) == 1
    assert other.id != run.id


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {"MOCK_STOP": "max_tokens"},
            {"output": [{"type": "text", "text": "mock child answer"}], "stop_reason": "max-tokens"},
        ),
        ({"MOCK_TEXT": "", "MOCK_STOP": "refusal"}, {"output": [], "stop_reason": "refusal"}),
        (
            {"MOCK_STOP": "cancelled"},
            {"output": [{"type": "text", "text": "mock child answer"}], "stop_reason": "aborted"},
        ),
        (
            {"MOCK_TEXT": "partial", "MOCK_STOP": "max_turn_requests"},
            {"output": [{"type": "text", "text": "partial"}], "diagnostic": F_REMOTE_LIMIT, "stop_reason": "error"},
        ),
        (
            {"MOCK_STOP": "private/path/SECRET_TOKEN"},
            {
                "output": [{"type": "text", "text": "mock child answer"}],
                "diagnostic": F_UNKNOWN_STOP,
                "stop_reason": "error",
            },
        ),
        (
            {"MOCK_OMIT_STOP": "1"},
            {
                "output": [{"type": "text", "text": "mock child answer"}],
                "diagnostic": F_UNKNOWN_STOP,
                "stop_reason": "error",
            },
        ),
    ],
    ids=["max_tokens", "refusal", "remote-cancelled", "max_turn_requests", "unknown-stop", "missing-stop"],
)
async def test_remote_stop_reasons_map_to_shared_results(
    tmp_path: Path, env: dict[str, str], expected: dict[str, object]
) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), agent_spec(tmp_path, env)) as run:
            result = await run.result()
    assert result.to_json() == expected


@pytest.mark.anyio
@pytest.mark.parametrize(("stop", "stop_reason"), [("max_tokens", "max-tokens"), ("refusal", "refusal")])
async def test_an_ignored_denial_is_the_whole_diagnostic_of_a_remote_stop(
    tmp_path: Path, stop: str, stop_reason: str
) -> None:
    env = {"MOCK_PERMISSION": "1", "MOCK_PERMISSION_IGNORE_DECISION": "1", "MOCK_TOOL_KIND": "read", "MOCK_STOP": stop}
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), agent_spec(tmp_path, env)) as run:
            result = await run.result()
    assert result.stop_reason == stop_reason
    assert result.diagnostic == P_REJECT_READ
