"""The zero-config timeout policy (docs/behaviour.md#registry-timeout-policy; scenarios 77–88;
docs/behaviour.md#registry-timeout-policy wrapper order).

Budgets are small real timers (<= 150 ms) waited on through the signal under ``fail_after``; nothing sleeps.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
import pytest

from host._exceptions import CodedError
from host._json import JsonValue
from host.cancel import CancelController, CancelSignal
from host.tools import ToolExecutionInput, ToolRegistry, ToolResult, ToolRunContext, install_timeout_policy
from host.tools._types import ExecuteNext, ToolDispatchExecution
from tests.tools._registry_helpers import (
    ABORTED,
    HI,
    Phases,
    call,
    error_json,
    instrumented_registry,
    make_tool,
    run_cancelling,
)

Body = Callable[[JsonValue, ToolRunContext], Awaitable[JsonValue]]


def _timeout_json(ms: str) -> dict[str, object]:
    return error_json(f"tool call timed out after {ms}ms", "ToolTimeoutError", "TOOL_TIMEOUT")


async def _cooperative(_args: JsonValue, ctx: ToolRunContext) -> JsonValue:
    await ctx.signal.wait()
    return "late"


def _setup(body: Body, timeout_ms: float | None) -> tuple[ToolRegistry, Phases]:
    return instrumented_registry(body, timeout_ms=timeout_ms, timeout_policy=True)


def _recording(seen: list[CancelSignal], inner: Body | None = None) -> Body:
    async def body(args: JsonValue, ctx: ToolRunContext) -> JsonValue:
        seen.append(ctx.signal)
        if inner is not None:
            return await inner(args, ctx)
        return "hi"

    return body


@pytest.mark.anyio
async def test_a_tool_without_a_budget_runs_untouched_with_the_callers_exact_signal() -> None:
    seen: list[CancelSignal] = []
    registry, _ = _setup(_recording(seen), None)
    controller = CancelController()
    with anyio.fail_after(5):
        result = await registry.execute(call(controller.signal))
    assert result.to_json() == HI
    assert seen == [controller.signal]


@pytest.mark.anyio
async def test_a_fast_budgeted_tool_keeps_its_own_result_on_a_derived_signal() -> None:
    seen: list[CancelSignal] = []
    registry, phases = _setup(_recording(seen), 5000)
    controller = CancelController()
    with anyio.fail_after(5):
        result = await registry.execute(call(controller.signal))
    assert result.to_json() == HI
    assert len(seen) == 1 and seen[0] is not controller.signal
    assert phases.post_signals == [controller.signal]


@pytest.mark.anyio
async def test_a_cooperative_tool_past_its_budget_gets_the_exact_timeout_result() -> None:
    registry, phases = _setup(_cooperative, 100)
    with anyio.fail_after(5):
        result = await registry.execute(call(CancelController().signal))
    assert result.to_json() == _timeout_json("100")
    assert phases.post == 1
    assert phases.observed[0][1] is result


@pytest.mark.anyio
async def test_a_tool_raising_its_own_abort_error_on_timeout_is_replaced_by_tool_timeout() -> None:
    async def body(_args: JsonValue, ctx: ToolRunContext) -> JsonValue:
        await ctx.signal.wait()
        raise CodedError("web fetch aborted", code="WEB_ABORTED")

    registry, _ = _setup(body, 50)
    with anyio.fail_after(5):
        result = await registry.execute(call(CancelController().signal))
    assert result.to_json() == _timeout_json("50")


@pytest.mark.anyio
async def test_a_caller_cancel_before_the_deadline_keeps_aborted() -> None:
    started = anyio.Event()

    async def body(args: JsonValue, ctx: ToolRunContext) -> JsonValue:
        started.set()
        return await _cooperative(args, ctx)

    registry, _ = _setup(body, 5000)
    result = await run_cancelling(registry, CancelController(), started)
    assert result.to_json() == ABORTED


@pytest.mark.anyio
async def test_the_deadline_firing_first_keeps_tool_timeout_despite_a_late_caller_cancel() -> None:
    timed_out, release = anyio.Event(), anyio.Event()

    async def body(_args: JsonValue, ctx: ToolRunContext) -> JsonValue:
        await ctx.signal.wait()
        timed_out.set()
        await release.wait()  # cleaning up while the caller cancels
        return "late"

    registry, _ = _setup(body, 50)
    result = await run_cancelling(registry, CancelController(), timed_out, release)
    assert result.to_json() == _timeout_json("50")


@pytest.mark.anyio
async def test_a_timeout_while_an_inner_wrapper_waits_before_next_is_tool_timeout_without_the_body() -> None:
    registry, phases = _setup(_cooperative, 50)

    async def slow_gate(exec_: ToolDispatchExecution, call_next: ExecuteNext) -> ToolResult:
        await exec_.signal.wait()
        return await call_next()

    registry.on_execute(slow_gate)
    with anyio.fail_after(5):
        result = await registry.execute(call(CancelController().signal))
    assert result.to_json() == _timeout_json("50")
    assert phases.body == 0


@pytest.mark.anyio
async def test_removing_the_policy_gives_the_body_the_callers_signal_again() -> None:
    seen: list[CancelSignal] = []
    registry = ToolRegistry()
    remove = install_timeout_policy(registry)
    registry.register(make_tool(body=_recording(seen), timeout_ms=5000))
    remove()
    remove()
    controller = CancelController()
    with anyio.fail_after(5):
        await registry.execute(call(controller.signal))
    assert seen == [controller.signal]


@pytest.mark.anyio
async def test_a_fractional_budget_prints_as_a_json_number() -> None:
    registry, _ = _setup(_cooperative, 1.5)
    with anyio.fail_after(5):
        result = await registry.execute(call(CancelController().signal))
    assert result.content == [{"type": "text", "text": "Error: tool call timed out after 1.5ms"}]


def _install_retry(registry: ToolRegistry) -> None:
    """A retry wrapper: one retry of a failed call, re-dispatched through the registry under ``exec.signal``.

    ``next()`` may be called only once, so the retry is a nested call; nested calls pass straight through.
    """
    nested_ids: set[str] = set()

    async def retry(exec_: ToolDispatchExecution, call_next: ExecuteNext) -> ToolResult:
        if exec_.call_id in nested_ids:
            return await call_next()
        first = await call_next()
        if not first.is_error:
            return first
        retry_id = f"{exec_.call_id}#retry"
        nested_ids.add(retry_id)
        return await registry.execute(
            ToolExecutionInput(
                call_id=retry_id, name=exec_.name, arguments=exec_.arguments, signal=exec_.signal, agent=exec_.agent
            )
        )

    registry.on_execute(retry)


def _flaky_then_fast(attempts: list[int]) -> Body:
    """Attempt 1 holds until its signal fires, then fails; attempt 2 answers at once."""

    async def body(_args: JsonValue, ctx: ToolRunContext) -> JsonValue:
        attempts.append(len(attempts) + 1)
        if len(attempts) == 1:
            await ctx.signal.wait()
            raise CodedError("attempt stopped", code="FLAKY")
        return "hi"

    return body


@pytest.mark.anyio
async def test_timeout_registered_inside_the_retry_wrapper_budgets_each_attempt() -> None:
    attempts: list[int] = []
    registry = ToolRegistry()
    _install_retry(registry)
    install_timeout_policy(registry)
    registry.register(make_tool(body=_flaky_then_fast(attempts), timeout_ms=100))
    with anyio.fail_after(5):
        result = await registry.execute(call(CancelController().signal))
    assert result.to_json() == HI
    assert attempts == [1, 2]


@pytest.mark.anyio
async def test_timeout_registered_outside_the_retry_wrapper_budgets_the_whole_operation() -> None:
    attempts: list[int] = []
    registry = ToolRegistry()
    install_timeout_policy(registry)
    _install_retry(registry)
    registry.register(make_tool(body=_flaky_then_fast(attempts), timeout_ms=100))
    with anyio.fail_after(5):
        result = await registry.execute(call(CancelController().signal))
    assert result.to_json() == _timeout_json("100")
    assert attempts == [1]
