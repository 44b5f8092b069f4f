"""Startup rejections, rollback, local cancellation and dispose against the real fake agent
(docs/behaviour.md#acp-acceptance)."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest

from host._exceptions import AcpRunFailure, AggregateError, ProcessTreeSurvivedError, StartAbortedError
from host.acp_provider import AcpProvider
from host.acp_provider._run import start_acp_run
from host.cancel import CancelController
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
    close_protocol_immediately,
    decorated_spawn,
    reject_final_exit_wait,
    reject_final_exit_wait_after_exit,
    tap_bounded_exit_wait,
)

ABORTED = "subagent request was aborted before the ACP child started"
E = "subagent-acp: Subagent failure (provider: ACP; "
RAW_CLEANUP = "cleanup failed at /private/path with SECRET_TOKEN"


@pytest.mark.anyio
async def test_cancel_after_ready_settles_aborted_with_the_partial_output(tmp_path: Path) -> None:
    controller = CancelController()
    ready = tmp_path / "ready"
    spec = agent_spec(tmp_path, MOCK_HANG="1", MOCK_READY_FILE=str(ready))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(controller.signal), spec) as run:
            await wait_for_file(ready)
            controller.cancel()
            result = await run.result()
    assert result.to_json() == {"output": [{"type": "text", "text": "mock child answer"}], "stop_reason": "aborted"}


@pytest.mark.anyio
async def test_run_entry_with_a_pre_cancelled_signal_spawns_nothing(tmp_path: Path) -> None:
    controller = CancelController()
    controller.cancel()
    sentinel = tmp_path / "sentinel"
    spec = agent_spec(tmp_path, command="touch", args=[str(sentinel)])
    with anyio.fail_after(5):
        async with task_group() as group:
            with pytest.raises(StartAbortedError) as caught:
                await start_acp_run(make_request(controller.signal), spec, task_group=group)
    assert str(caught.value) == ABORTED
    assert not sentinel.exists()


@pytest.mark.anyio
async def test_provider_pre_abort_wins_over_a_missing_cwd_and_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    controller = CancelController()
    controller.cancel()
    caplog.set_level(logging.DEBUG, logger="host.acp_provider")
    with anyio.fail_after(5):
        async with task_group() as group:
            provider = AcpProvider(agent_entry(), task_group=group)
            with pytest.raises(StartAbortedError) as caught:
                await provider.start(make_request(controller.signal, parent_cwd=None))
            await provider.aclose()
    assert str(caught.value) == ABORTED
    assert [r for r in caplog.records if r.name.startswith("host.acp_provider")] == []


@pytest.mark.anyio
async def test_crash_on_initialize_raises_the_initialize_exit_failure(tmp_path: Path) -> None:
    sink = RecordingSink()
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            with pytest.raises(AcpRunFailure) as caught:
                await start_acp_run(
                    make_request(), agent_spec(tmp_path, MOCK_CRASH_ON_INITIALIZE="1"), task_group=group, on_error=sink
                )
    assert str(caught.value) == E + "stage: initialize; category: process-exit; exit code: 11)"
    assert len(sink.calls) == 1


@pytest.mark.anyio
async def test_a_protocol_closed_at_once_while_the_child_lives_is_an_initialize_transport_failure(
    tmp_path: Path,
) -> None:
    spec = agent_spec(tmp_path, eof_grace_ms=50, grace_ms=50)
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            with pytest.raises(AcpRunFailure) as caught:
                spawn = decorated_spawn(close_protocol_immediately())
                await start_acp_run(make_request(), spec, task_group=group, spawn=spawn)
    assert str(caught.value) == E + "stage: initialize; category: transport)"


@pytest.mark.anyio
async def test_missing_session_id_rolls_back_through_the_eof_rung_only(tmp_path: Path) -> None:
    flushed = tmp_path / "flushed"
    waits: list[float] = []
    sink = RecordingSink()
    spec = agent_spec(
        tmp_path,
        eof_grace_ms=1000,
        grace_ms=100,
        MOCK_MISSING_SESSION_ID="1",
        MOCK_FLUSH_ON_EOF=str(flushed),
        MOCK_FLUSH_DELAY_MS="20",
    )
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            with pytest.raises(AcpRunFailure) as caught:
                spawn = decorated_spawn(tap_bounded_exit_wait(waits))
                await start_acp_run(make_request(), spec, task_group=group, spawn=spawn, on_error=sink)
            assert flushed.exists()
    assert str(caught.value) == E + "stage: new-session; category: protocol)"
    assert waits == [1000]
    assert sink.texts == ["ACP child published without a session id"]


@pytest.mark.anyio
async def test_failed_rollback_after_a_protocol_failure_aggregates_both_safe_messages(tmp_path: Path) -> None:
    raw = ProcessTreeSurvivedError(RAW_CLEANUP)
    sink = RecordingSink()
    spec = agent_spec(tmp_path, eof_grace_ms=10, grace_ms=10, MOCK_MISSING_SESSION_ID="1")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            with pytest.raises(AggregateError) as caught:
                spawn = decorated_spawn(reject_final_exit_wait_after_exit(raw))
                await start_acp_run(make_request(), spec, task_group=group, spawn=spawn, on_error=sink)
    text = str(caught.value)
    assert text.startswith(
        E + "stage: new-session; category: protocol)" + "; " + E + "stage: teardown; category: process-exit;"
    )
    assert_no_secrets(text)
    assert len(caught.value.errors) == 2
    assert sink.texts == ["ACP child published without a session id", RAW_CLEANUP]


@pytest.mark.anyio
async def test_cancel_during_session_new_with_a_failed_rollback_reports_only_the_teardown(tmp_path: Path) -> None:
    raw = ProcessTreeSurvivedError(RAW_CLEANUP)
    sink = RecordingSink()
    controller = CancelController()
    ready, go = tmp_path / "ready", tmp_path / "go"
    spec = agent_spec(
        tmp_path, eof_grace_ms=10, grace_ms=10, MOCK_NEWSESSION_READY=str(ready), MOCK_NEWSESSION_GO=str(go)
    )
    outcome: list[BaseException] = []

    async def start() -> None:
        try:
            spawn = decorated_spawn(reject_final_exit_wait(raw))
            await start_acp_run(make_request(controller.signal), spec, task_group=group, spawn=spawn, on_error=sink)
        except AggregateError as exc:
            outcome.append(exc)

    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            async with anyio.create_task_group() as starter:
                starter.start_soon(start)
                await wait_for_file(ready)
                controller.cancel()
                go.write_text("go")
    [error] = outcome
    assert isinstance(error, AggregateError)
    assert len(error.errors) == 1
    assert str(error) == E + "stage: teardown; category: unknown)"
    assert sink.texts == [RAW_CLEANUP]


@pytest.mark.anyio
async def test_dispose_escalates_to_sigkill_for_a_sigterm_trapping_child(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    spec = agent_spec(tmp_path, eof_grace_ms=150, grace_ms=150, MOCK_TRAP_SIGTERM="1", MOCK_READY_FILE=str(ready))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            run = await start_acp_run(make_request(), spec, task_group=group)
            await wait_for_file(ready)
            await run.result()
            with anyio.fail_after(4):
                await run.dispose()


@pytest.mark.anyio
async def test_the_eof_window_outlasts_the_signal_grace(tmp_path: Path) -> None:
    flushed = tmp_path / "flushed"
    spec = agent_spec(
        tmp_path,
        eof_grace_ms=2000,
        grace_ms=50,
        MOCK_HANG="1",
        MOCK_FLUSH_ON_EOF=str(flushed),
        MOCK_FLUSH_DELAY_MS="400",
    )
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), spec):
            pass
    assert flushed.exists()


@pytest.mark.anyio
async def test_an_eof_deaf_child_gets_sigterm_after_the_eof_window(tmp_path: Path) -> None:
    sigterm = tmp_path / "sigterm"
    ready = tmp_path / "ready"
    spec = agent_spec(
        tmp_path,
        eof_grace_ms=150,
        grace_ms=2000,
        MOCK_HANG="1",
        MOCK_IGNORE_EOF="1",
        MOCK_SIGTERM_FILE=str(sigterm),
        MOCK_READY_FILE=str(ready),
    )
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            run = await start_acp_run(make_request(), spec, task_group=group)
            with anyio.fail_after(5):
                await run.dispose()
    assert sigterm.exists()


@pytest.mark.anyio
async def test_provider_cancel_during_session_new_sends_no_session_cancel(tmp_path: Path) -> None:
    controller = CancelController()
    ready, go, cancel_log = tmp_path / "ready", tmp_path / "go", tmp_path / "cancel-log"
    entry = agent_entry(MOCK_NEWSESSION_READY=str(ready), MOCK_NEWSESSION_GO=str(go), MOCK_CANCEL_LOG=str(cancel_log))
    errors: list[BaseException] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            provider = AcpProvider(entry, task_group=group)

            async def start() -> None:
                try:
                    await provider.start(make_request(controller.signal, parent_cwd=str(tmp_path)))
                except StartAbortedError as exc:
                    errors.append(exc)

            async with anyio.create_task_group() as starter:
                starter.start_soon(start)
                await wait_for_file(ready)
                controller.cancel()
                go.write_text("go")
            await provider.aclose()
    assert [str(e) for e in errors] == [ABORTED]
    assert not cancel_log.exists()


@pytest.mark.anyio
async def test_provider_cancel_during_the_prompt_sends_exactly_one_session_cancel(tmp_path: Path) -> None:
    controller = CancelController()
    ready, cancel_log = tmp_path / "ready", tmp_path / "cancel-log"
    entry = agent_entry(MOCK_HANG="1", MOCK_READY_FILE=str(ready), MOCK_CANCEL_LOG=str(cancel_log))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            provider = AcpProvider(entry, task_group=group)
            run = await provider.start(make_request(controller.signal, parent_cwd=str(tmp_path)))
            await wait_for_file(ready)
            controller.cancel()
            result = await run.result()
            await run.dispose()
            await provider.aclose()
    assert result.stop_reason == "aborted"
    assert result.diagnostic is None
    assert cancel_log.read_text() == "cancel\n"


@pytest.mark.anyio
async def test_no_session_cancel_after_a_completed_turn(tmp_path: Path) -> None:
    cancel_log = tmp_path / "cancel-log"
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), agent_spec(tmp_path, MOCK_CANCEL_LOG=str(cancel_log))) as run:
            assert (await run.result()).stop_reason == "completed"
    assert not cancel_log.exists()


@pytest.mark.anyio
async def test_cancel_then_two_disposes_send_one_session_cancel(tmp_path: Path) -> None:
    controller = CancelController()
    ready, cancel_log = tmp_path / "ready", tmp_path / "cancel-log"
    spec = agent_spec(tmp_path, MOCK_HANG="1", MOCK_READY_FILE=str(ready), MOCK_CANCEL_LOG=str(cancel_log))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            run = await start_acp_run(make_request(controller.signal), spec, task_group=group)
            await wait_for_file(ready)
            controller.cancel()
            await run.dispose()
            await run.dispose()
    assert cancel_log.read_text() == "cancel\n"


@pytest.mark.anyio
async def test_dispose_without_a_signal_cancel_still_sends_session_cancel_once(tmp_path: Path) -> None:
    ready, cancel_log = tmp_path / "ready", tmp_path / "cancel-log"
    spec = agent_spec(tmp_path, MOCK_HANG="1", MOCK_READY_FILE=str(ready), MOCK_CANCEL_LOG=str(cancel_log))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            run = await start_acp_run(make_request(), spec, task_group=group)
            await wait_for_file(ready)
            await run.dispose()
            result = await run.result()
    assert result.to_json() == {"output": [{"type": "text", "text": "mock child answer"}], "stop_reason": "aborted"}
    assert cancel_log.read_text() == "cancel\n"


@pytest.mark.anyio
async def test_initialize_fails_with_the_exit_code_when_the_child_exits_while_a_grandchild_holds_stdout(
    tmp_path: Path,
) -> None:
    spec = agent_spec(tmp_path, eof_grace_ms=200, grace_ms=200, args=_agent_exiting_on(tmp_path, "initialize"))
    # An interpreter cold start, then an exit that must be observed within the 200 ms grace.
    with anyio.fail_after(10):
        async with task_group() as group:
            with pytest.raises(AcpRunFailure) as caught:
                await start_acp_run(make_request(), spec, task_group=group)
    assert str(caught.value) == E + "stage: initialize; category: process-exit; exit code: 3)"
