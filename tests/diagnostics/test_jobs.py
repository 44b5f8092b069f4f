"""The one-shot background job mapping, dispose-before-report and status lines
(docs/behaviour.md#results-background-jobs)."""

from __future__ import annotations

import anyio
import pytest

from host._exceptions import AggregateError
from host.cancel import CancelController
from host.diagnostics import JobOutcome, SubagentResult, settle_job_start, status_line
from host.diagnostics._jobs import job_outcome_of, settle_job_run
from tests.diagnostics._helpers import ScriptedRun


def partial(stop_reason: str, diagnostic: str | None = None) -> SubagentResult:
    return SubagentResult(output=[{"type": "text", "text": "partial"}], stop_reason=stop_reason, diagnostic=diagnostic)


def test_completed_maps_to_completed_with_the_joined_text() -> None:
    assert job_outcome_of(partial("completed")) == JobOutcome("completed", output="partial")


def test_aborted_without_diagnostic_maps_to_killed() -> None:
    assert job_outcome_of(partial("aborted")) == JobOutcome("killed")


@pytest.mark.parametrize("stop_reason", ["error", "max-tokens", "refusal", "paused"])
def test_other_stop_reasons_map_to_failed_with_the_reason(stop_reason: str) -> None:
    assert job_outcome_of(partial(stop_reason)) == JobOutcome("failed", detail=stop_reason)


def test_error_with_a_diagnostic_maps_to_failed_with_both() -> None:
    outcome = job_outcome_of(partial("error", "child denied a tool request"))

    assert outcome == JobOutcome("failed", detail="error; diagnostic: child denied a tool request")


def test_remote_abort_that_explains_itself_is_a_failure_not_a_kill() -> None:
    outcome = job_outcome_of(partial("aborted", "ACP permission was denied"))

    assert outcome == JobOutcome("failed", detail="aborted; diagnostic: ACP permission was denied")


def test_completed_ignores_a_diagnostic() -> None:
    assert job_outcome_of(partial("completed", "stray")) == JobOutcome("completed", output="partial")


@pytest.mark.anyio
async def test_the_run_is_disposed_before_its_outcome_is_returned() -> None:
    run = ScriptedRun(result_value=partial("completed"))

    with anyio.fail_after(5):
        outcome = await settle_job_run(run)

    assert run.calls == ["result", "dispose"]
    assert outcome == JobOutcome("completed", output="partial")


@pytest.mark.anyio
async def test_result_raising_is_a_failed_job_and_dispose_still_runs() -> None:
    run = ScriptedRun(result_error=RuntimeError("transport gone"))

    with anyio.fail_after(5):
        outcome = await settle_job_run(run)

    assert outcome == JobOutcome("failed", detail="RuntimeError: transport gone")
    assert run.calls == ["result", "dispose"]


@pytest.mark.anyio
async def test_dispose_failing_after_completed_is_a_failed_job() -> None:
    run = ScriptedRun(result_value=partial("completed"), dispose_error=RuntimeError("reap failed"))

    with anyio.fail_after(5):
        outcome = await settle_job_run(run)

    assert outcome == JobOutcome("failed", detail="dispose failed: RuntimeError: reap failed")


@pytest.mark.anyio
async def test_result_and_dispose_both_failing_join_the_details() -> None:
    run = ScriptedRun(result_error=RuntimeError("result failed"), dispose_error=RuntimeError("reap failed"))

    with anyio.fail_after(5):
        outcome = await settle_job_run(run)

    assert outcome == JobOutcome(
        "failed", detail="RuntimeError: result failed; dispose failed: RuntimeError: reap failed"
    )


@pytest.mark.anyio
async def test_dispose_failing_after_an_error_result_keeps_the_prior_detail() -> None:
    run = ScriptedRun(result_value=partial("error"), dispose_error=RuntimeError("reap failed"))

    with anyio.fail_after(5):
        outcome = await settle_job_run(run)

    assert outcome == JobOutcome("failed", detail="error; dispose failed: RuntimeError: reap failed")


async def failing_start(error: Exception) -> ScriptedRun:
    raise error


@pytest.mark.anyio
async def test_start_raising_a_plain_error_after_the_job_was_cancelled_is_killed() -> None:
    controller = CancelController()
    controller.cancel("background subagent task killed")

    with anyio.fail_after(5):
        outcome = await settle_job_start(failing_start(RuntimeError("aborted")), controller.signal)

    assert outcome == JobOutcome("killed")


@pytest.mark.anyio
async def test_start_raising_an_aggregate_after_cancel_stays_failed() -> None:
    controller = CancelController()
    controller.cancel()
    error = AggregateError([RuntimeError("x")], "startup failed and cleanup also failed")

    with anyio.fail_after(5):
        outcome = await settle_job_start(failing_start(error), controller.signal)

    assert outcome == JobOutcome("failed", detail="AggregateError: startup failed and cleanup also failed")


@pytest.mark.anyio
async def test_start_raising_without_cancel_is_a_failed_job() -> None:
    with anyio.fail_after(5):
        outcome = await settle_job_start(failing_start(RuntimeError("setup failed")), CancelController().signal)

    assert outcome == JobOutcome("failed", detail="RuntimeError: setup failed")


@pytest.mark.anyio
async def test_successful_start_settles_the_run() -> None:
    run = ScriptedRun(result_value=partial("aborted"))

    async def start() -> ScriptedRun:
        return run

    with anyio.fail_after(5):
        outcome = await settle_job_start(start(), CancelController().signal)

    assert outcome == JobOutcome("killed")
    assert run.calls == ["result", "dispose"]


def test_status_lines() -> None:
    assert status_line(JobOutcome("killed")) == "[status: killed]"
    assert status_line(JobOutcome("failed", detail="error; diagnostic: x")) == "[status: failed, error; diagnostic: x]"


def test_status_line_of_the_sdk_child_error_example() -> None:
    outcome = job_outcome_of(
        SubagentResult(
            stop_reason="error",
            diagnostic="Subagent failure (provider: DSH SDK; stage: session-run; category: child-error)",
        )
    )

    assert status_line(outcome) == (
        "[status: failed, error; diagnostic: Subagent failure (provider: DSH SDK; stage: session-run; "
        "category: child-error)]"
    )
