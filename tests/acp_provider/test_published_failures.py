"""Published failures, spawn failures, dispose failures and concurrency against the real fake agent
(docs/behaviour.md#acp-acceptance)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal

import anyio
import pytest

from host._exceptions import AcpRunFailure, ProcessTreeSurvivedError
from host.acp_provider import AcpProvider
from host.acp_provider._run import start_acp_run
from host.cancel import CancelController
from host.diagnostics import SubagentResult
from host.process import ProcessOutcome
from tests.acp_provider._helpers import (
    PROCESS_TIMEOUT_S,
    RecordingSink,
    agent_entry,
    agent_spec,
    assert_no_secrets,
    make_request,
    open_run,
    task_group,
    wait_for_file,
)
from tests.acp_provider._helpers import agent_exiting_on as _agent_exiting_on
from tests.acp_provider._seams import (
    close_protocol_on_prompt,
    decorated_spawn,
    raising_spawn,
    reject_final_exit_wait,
    reject_final_exit_wait_after_exit,
    replace_process_outcome,
    tap_bounded_exit_wait,
)

E = "subagent-acp: Subagent failure (provider: ACP; "
F = "Subagent failure (provider: ACP; "
PROCESS_START = E + "stage: process; category: process-start)"
RAW_CLEANUP = "cleanup failed at /private/path with SECRET_TOKEN"


@pytest.mark.anyio
async def test_a_protocol_cut_on_prompt_is_a_prompt_transport_failure(tmp_path: Path) -> None:
    spec = agent_spec(tmp_path, eof_grace_ms=100, grace_ms=100, MOCK_HANG="1")
    sink = RecordingSink()
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        request = make_request(text="private prompt text")
        async with open_run(request, spec, spawn=decorated_spawn(close_protocol_on_prompt()), on_error=sink) as run:
            result = await run.result()
    assert result.to_json() == {
        "output": [],
        "diagnostic": F + "stage: prompt; category: transport)",
        "stop_reason": "error",
    }
    assert "private prompt text" not in str(result.to_json())
    assert len(sink.calls) == 1


@pytest.mark.anyio
async def test_cancel_interrupts_the_exit_observation_of_a_failed_prompt(tmp_path: Path) -> None:
    controller = CancelController()
    waits: list[float] = []
    spec = agent_spec(tmp_path, grace_ms=5000, MOCK_HANG="1")
    sink = RecordingSink()
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        spawn = decorated_spawn(tap_bounded_exit_wait(waits), close_protocol_on_prompt())
        async with open_run(make_request(controller.signal), spec, spawn=spawn, on_error=sink) as run:
            controller.cancel()
            with anyio.fail_after(0.5):
                result = await run.result()
            assert waits == []
    assert result.to_json() == {"output": [], "stop_reason": "aborted"}
    assert sink.calls == []


@pytest.mark.anyio
async def test_provider_crash_after_a_chunk_keeps_the_partial_output(tmp_path: Path) -> None:
    entry = agent_entry(MOCK_TEXT="partial answer", MOCK_CRASH_AFTER_CHUNK="1")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            provider = AcpProvider(entry, task_group=group)
            run = await provider.start(make_request(parent_cwd=str(tmp_path)))
            result = await run.result()
            await provider.aclose()
    assert result.to_json() == {
        "output": [{"type": "text", "text": "partial answer"}],
        "diagnostic": F + "stage: process; category: process-exit; exit code: 17)",
        "stop_reason": "error",
    }


@pytest.mark.anyio
async def test_the_observed_outcome_decides_the_exit_facts(tmp_path: Path) -> None:
    spec = agent_spec(tmp_path, MOCK_CRASH_AFTER_CHUNK="1")
    spawn = decorated_spawn(replace_process_outcome(ProcessOutcome(exit_code=None, signal="SIGTERM")))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), spec, spawn=spawn) as run:
            result = await run.result()
    assert result.to_json() == {
        "output": [{"type": "text", "text": "mock child answer"}],
        "diagnostic": F + "stage: process; category: process-exit; signal: SIGTERM)",
        "stop_reason": "error",
    }


@pytest.mark.anyio
async def test_a_missing_executable_is_a_process_start_failure_without_the_path(tmp_path: Path) -> None:
    sink = RecordingSink()
    spec = agent_spec(tmp_path, command="/nonexistent/private/SECRET_TOKEN/acp-agent", args=[])
    with anyio.fail_after(5):
        async with task_group() as group:
            with pytest.raises(AcpRunFailure) as caught:
                await start_acp_run(make_request(), spec, task_group=group, on_error=sink)
    assert str(caught.value) == PROCESS_START
    assert len(sink.calls) == 1
    assert isinstance(caught.value.__cause__, OSError)


@pytest.mark.anyio
async def test_a_raising_spawn_is_a_process_start_failure_and_the_sink_gets_the_raw_error(tmp_path: Path) -> None:
    raw = OSError("spawn rejected /private/path SECRET_TOKEN")
    sink = RecordingSink()
    with anyio.fail_after(5):
        async with task_group() as group:
            with pytest.raises(AcpRunFailure) as caught:
                await start_acp_run(
                    make_request(), agent_spec(tmp_path), task_group=group, spawn=raising_spawn(raw), on_error=sink
                )
    assert str(caught.value) == PROCESS_START
    assert_no_secrets(str(caught.value))
    assert [error for error, _ in sink.calls] == [raw]


@pytest.mark.anyio
async def test_a_non_executable_command_is_a_process_start_failure(tmp_path: Path) -> None:
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o644)
    with anyio.fail_after(5):
        async with task_group() as group:
            with pytest.raises(AcpRunFailure) as caught:
                await start_acp_run(
                    make_request(), agent_spec(tmp_path, command=str(script), args=[]), task_group=group
                )
    assert str(caught.value) == PROCESS_START


@pytest.mark.anyio
async def test_provider_graces_reach_the_run(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    entry = agent_entry(eof_grace_ms=150, grace_ms=150, MOCK_TRAP_SIGTERM="1", MOCK_READY_FILE=str(ready))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            provider = AcpProvider(entry, task_group=group)
            run = await provider.start(make_request(parent_cwd=str(tmp_path)))
            await wait_for_file(ready)
            await run.result()
            with anyio.fail_after(4):
                await run.dispose()
            await provider.aclose()


@pytest.mark.anyio
async def test_provider_missing_executable_is_a_process_start_failure(tmp_path: Path) -> None:
    entry = agent_entry(command="/nonexistent/acp-agent-binary", args=[])
    with anyio.fail_after(5):
        async with task_group() as group:
            provider = AcpProvider(entry, task_group=group)
            with pytest.raises(AcpRunFailure) as caught:
                await provider.start(make_request(parent_cwd=str(tmp_path)))
            await provider.aclose()
    assert str(caught.value) == PROCESS_START


def _policy_env(kind: str) -> dict[str, str]:
    return {
        "MOCK_PERMISSION": "1",
        "MOCK_PERMISSION_IGNORE_DECISION": "1",
        "MOCK_TOOL_KIND": kind,
        "MOCK_STOP": "max_turn_requests",
    }


@pytest.mark.anyio
async def test_twenty_concurrent_runs_keep_their_diagnostics_apart(tmp_path: Path) -> None:
    cases: list[tuple[Literal["allow", "reject"], str]] = [
        ("allow" if i % 2 else "reject", kind)
        for i, kind in enumerate(["execute", "edit", "read", "delete", "fetch"] * 4)
    ]
    results: dict[int, SubagentResult] = {}

    async def one(index: int, policy: Literal["allow", "reject"], kind: str) -> None:
        async with open_run(make_request(), agent_spec(tmp_path, _policy_env(kind), permission=policy)) as run:
            results[index] = await run.result()

    # Twenty interpreters cold-starting at once on a small CI box.
    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            for index, (policy, kind) in enumerate(cases):
                group.start_soon(one, index, policy, kind)
    for index, (policy, kind) in enumerate(cases):
        decision = "allowed" if policy == "allow" else "denied"
        own = f"ACP unattended decision (policy: {policy}; request: {kind}; decision: {decision})"
        diagnostic = results[index].diagnostic
        assert diagnostic is not None
        assert diagnostic.split("\n") == [
            F + "stage: prompt; category: remote-limit; stop reason: max_turn_requests)",
            own,
        ]


@pytest.mark.anyio
@pytest.mark.parametrize("after_exit", [False, True], ids=["no-exit-observed", "exit-observed"])
async def test_a_failed_dispose_raises_the_safe_teardown_message(tmp_path: Path, after_exit: bool) -> None:
    raw = ProcessTreeSurvivedError(RAW_CLEANUP)
    sink = RecordingSink()
    decorator = reject_final_exit_wait_after_exit(raw) if after_exit else reject_final_exit_wait(raw)
    spec = agent_spec(tmp_path, eof_grace_ms=10, grace_ms=10, MOCK_HANG="1", MOCK_IGNORE_CANCEL="1")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            run = await start_acp_run(
                make_request(), spec, task_group=group, spawn=decorated_spawn(decorator), on_error=sink
            )
            with pytest.raises(AcpRunFailure) as caught:
                await run.dispose()
            with pytest.raises(AcpRunFailure) as again:
                await run.dispose()
            result = await run.result()
    text = str(caught.value)
    assert again.value is caught.value
    if after_exit:
        assert text.startswith(E + "stage: teardown; category: process-exit;")
        assert "exit code: " in text or "signal: " in text
    else:
        assert text == E + "stage: teardown; category: unknown)"
    assert_no_secrets(text)
    assert [error for error, _ in sink.calls] == [raw]
    assert result.to_json() == {"output": [], "stop_reason": "aborted"}


@pytest.mark.anyio
@pytest.mark.parametrize("sink_raises", [False, True], ids=["recording-sink", "raising-sink"])
async def test_crash_on_prompt_is_a_process_exit_failure_reported_once(tmp_path: Path, sink_raises: bool) -> None:
    sink = RecordingSink(raises=sink_raises)
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), agent_spec(tmp_path, MOCK_CRASH_ON_PROMPT="1"), on_error=sink) as run:
            result = await run.result()
    assert result.stop_reason == "error"
    assert result.diagnostic == F + "stage: process; category: process-exit; exit code: 1)"
    assert len(sink.calls) == 1
    error, stop_reason = sink.calls[0]
    assert stop_reason == "error"
    assert str(error)


@pytest.mark.anyio
async def test_provider_logs_one_child_run_failed_line_for_a_crash_on_prompt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            provider = AcpProvider(agent_entry(MOCK_CRASH_ON_PROMPT="1"), task_group=group)
            run = await provider.start(make_request(parent_cwd=str(tmp_path)))
            await run.result()
            await provider.aclose()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].startswith('subagent-acp "acp": child run failed (error): ')


@pytest.mark.anyio
@pytest.mark.parametrize("switch", ["MOCK_CRASH_ON_CANCEL", "MOCK_IGNORE_CANCEL"])
async def test_local_cancel_wins_over_what_the_child_does_next(tmp_path: Path, switch: str) -> None:
    controller = CancelController()
    ready = tmp_path / "ready"
    entry = agent_entry({switch: "1"}, MOCK_HANG="1", MOCK_READY_FILE=str(ready))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            provider = AcpProvider(entry, task_group=group)
            run = await provider.start(make_request(controller.signal, parent_cwd=str(tmp_path)))
            await wait_for_file(ready)
            controller.cancel()
            with anyio.fail_after(4):
                result = await run.result()
            await run.dispose()
            await provider.aclose()
    assert result.stop_reason == "aborted"
    assert result.diagnostic is None


@pytest.mark.anyio
async def test_provider_close_disposes_live_runs_and_refuses_new_ones(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    entry = agent_entry(MOCK_HANG="1", MOCK_READY_FILE=str(ready))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            provider = AcpProvider(entry, task_group=group)
            run = await provider.start(make_request(parent_cwd=str(tmp_path)))
            await wait_for_file(ready)
            await provider.aclose()
            result = await run.result()
            with pytest.raises(Exception, match="closed"):
                await provider.start(make_request(parent_cwd=str(tmp_path)))
    assert result.stop_reason == "aborted"


@pytest.mark.anyio
async def test_a_prompt_fails_with_the_exit_code_when_the_child_exits_while_a_grandchild_holds_stdout(
    tmp_path: Path,
) -> None:
    spec = agent_spec(tmp_path, eof_grace_ms=200, grace_ms=200, args=_agent_exiting_on(tmp_path, "session/prompt"))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), spec) as run:
            # The child exits at once on the prompt; observing it takes at most the 200 ms grace.
            with anyio.fail_after(5):
                result = await run.result()
    assert result.to_json() == {
        "output": [{"type": "text", "text": "partial"}],
        "diagnostic": F + "stage: process; category: process-exit; exit code: 3)",
        "stop_reason": "error",
    }
