"""The foreground delegation texts and settle-then-dispose precedence (docs/behaviour.md#results-foreground-tool,
acceptance 12–21).

The registry renders a raised error as ``"Error: " + str(error)``; these tests pin ``str(error)``.
"""

from __future__ import annotations

import anyio
import pytest

from host._exceptions import AcpRunFailure, AggregateError, SubagentRunError
from host.cancel import CancelController
from host.diagnostics import (
    AcpFailureFacts,
    SubagentResult,
    acp_run_failure,
    foreground_failure_message,
    text_of,
)
from host.tools._delegation import settle_foreground_run
from tests.diagnostics._helpers import HangingRun, ScriptedRun

PARTIAL = "\nPartial output before the run ended:\npartial reply"


def partial_result(stop_reason: str, diagnostic: str | None = None, text: str = "partial reply") -> SubagentResult:
    return SubagentResult(output=[{"type": "text", "text": text}], stop_reason=stop_reason, diagnostic=diagnostic)


@pytest.mark.parametrize(
    ("stop_reason", "headline"),
    [
        ("aborted", "subagent run was cancelled"),
        ("error", "subagent run failed"),
        ("max-tokens", "subagent run hit its token limit before finishing"),
        ("refusal", "subagent declined the task"),
    ],
)
@pytest.mark.anyio
async def test_non_completed_run_raises_its_headline_with_the_partial_output(stop_reason: str, headline: str) -> None:
    run = ScriptedRun(result_value=partial_result(stop_reason))

    with anyio.fail_after(5), pytest.raises(SubagentRunError) as caught:
        await settle_foreground_run(run)

    assert str(caught.value) == headline + PARTIAL
    assert run.calls == ["result", "dispose"]


def test_failure_message_shows_the_diagnostic_before_the_partial_output() -> None:
    result = partial_result("error", diagnostic="child denied a tool request", text="partial assistant text")

    assert foreground_failure_message(result) == (
        "subagent run failed\nDiagnostic: child denied a tool request\n"
        "Partial output before the run ended:\npartial assistant text"
    )


def test_failure_message_of_an_unknown_stop_reason_names_it() -> None:
    assert foreground_failure_message(SubagentResult(stop_reason="paused")) == "subagent run ended abnormally (paused)"


def test_failure_message_omits_empty_partial_output_and_skips_non_text_blocks() -> None:
    result = SubagentResult(
        output=[{"type": "image", "data": "…"}, {"type": "text", "text": ""}], stop_reason="aborted"
    )

    assert foreground_failure_message(result) == "subagent run was cancelled"


def test_failure_message_pins_the_acp_remote_limit_example() -> None:
    result = SubagentResult(
        output=[{"type": "text", "text": "partial loader answer"}],
        stop_reason="error",
        diagnostic=(
            "Subagent failure (provider: ACP; stage: prompt; category: remote-limit; stop reason: max_turn_requests)"
        ),
    )

    assert "Error: " + foreground_failure_message(result) == (
        "Error: subagent run failed\n"
        "Diagnostic: Subagent failure (provider: ACP; stage: prompt; category: remote-limit; "
        "stop reason: max_turn_requests)\n"
        "Partial output before the run ended:\npartial loader answer"
    )


@pytest.mark.anyio
async def test_completed_run_returns_the_foreground_value_after_disposing() -> None:
    output = [{"type": "text", "text": "a"}, {"type": "image", "data": "x"}, {"type": "text", "text": "b"}]
    run = ScriptedRun(result_value=SubagentResult(output=output, stop_reason="completed"), id="run-42")

    with anyio.fail_after(5):
        value = await settle_foreground_run(run)

    assert value == {"kind": "foreground", "run_id": "run-42", "output": output}
    assert text_of(value["output"]) == "ab"
    assert run.calls == ["result", "dispose"]


@pytest.mark.anyio
async def test_failed_result_and_failed_dispose_raise_an_aggregate_with_the_exact_message() -> None:
    dispose_error = RuntimeError("reap failed")
    run = ScriptedRun(result_value=SubagentResult(stop_reason="error"), dispose_error=dispose_error)

    with anyio.fail_after(5), pytest.raises(AggregateError) as caught:
        await settle_foreground_run(run)

    assert str(caught.value) == (
        "subagent run failed: SubagentRunError: subagent run failed; dispose failed: RuntimeError: reap failed"
    )
    assert isinstance(caught.value.errors[0], SubagentRunError)
    assert caught.value.errors[1] is dispose_error


@pytest.mark.anyio
async def test_completed_run_with_a_failed_dispose_raises_the_dispose_error() -> None:
    dispose_error = acp_run_failure(AcpFailureFacts("teardown", "unknown"))
    run = ScriptedRun(result_value=SubagentResult(stop_reason="completed"), dispose_error=dispose_error)

    with anyio.fail_after(5), pytest.raises(AcpRunFailure) as caught:
        await settle_foreground_run(run)

    assert caught.value is dispose_error
    assert run.calls == ["result", "dispose"]


@pytest.mark.anyio
async def test_completed_run_with_a_plain_dispose_error_renders_only_its_message() -> None:
    run = ScriptedRun(result_value=SubagentResult(stop_reason="completed"), dispose_error=RuntimeError("reap failed"))

    with anyio.fail_after(5), pytest.raises(RuntimeError) as caught:
        await settle_foreground_run(run)

    assert "Error: " + str(caught.value) == "Error: reap failed"


@pytest.mark.anyio
async def test_result_raising_anyway_still_disposes_and_raises_that_error() -> None:
    raw = RuntimeError("transport gone")
    run = ScriptedRun(result_error=raw)

    with anyio.fail_after(5), pytest.raises(RuntimeError) as caught:
        await settle_foreground_run(run)

    assert caught.value is raw
    assert run.calls == ["result", "dispose"]


@pytest.mark.anyio
async def test_cancelling_the_signal_of_a_hanging_run_raises_cancelled_with_the_partial_and_disposes() -> None:
    controller = CancelController()
    run = HangingRun(controller.signal, partial="half")
    errors: list[BaseException] = []

    async def delegate() -> None:
        try:
            await settle_foreground_run(run)
        except SubagentRunError as exc:
            errors.append(exc)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(delegate)
            await anyio.wait_all_tasks_blocked()
            assert run.calls == ["result"]
            controller.cancel()

    assert [str(e) for e in errors] == ["subagent run was cancelled\nPartial output before the run ended:\nhalf"]
    assert run.calls == ["result", "dispose"]


@pytest.mark.anyio
async def test_task_cancelled_while_waiting_still_disposes_the_run() -> None:
    run = HangingRun(CancelController().signal)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(settle_foreground_run, run)
            await anyio.wait_all_tasks_blocked()
            tg.cancel_scope.cancel()

    assert run.calls == ["result", "dispose"]
