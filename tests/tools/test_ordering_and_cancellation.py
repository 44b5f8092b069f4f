"""Stage ordering and every cancellation race of the pipeline (docs/behaviour.md#registry-pipeline,
#registry-precedence, #registry-quiescence; scenarios 23–41)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Awaitable, Callable

import anyio
import pytest

from host._exceptions import CodedError
from host._json import JsonValue
from host.cancel import CancelController, CancelSignal
from host.tools import ToolRegistry, ToolResult, ToolRunContext, ToolSuccess
from host.tools._types import (
    Accept,
    Deny,
    ExecuteNext,
    PostExecuteDecision,
    PostExecuteNext,
    PreExecuteDecision,
    PreExecuteNext,
    ToolDispatchExecution,
    ToolExecution,
)
from tests.tools._registry_helpers import (
    ABORTED,
    ABORTED_BEFORE_DISPATCH,
    HI,
    call,
    error_json,
    instrumented_registry,
    make_tool,
    run_cancelling,
)


@pytest.mark.anyio
async def test_pre_and_post_listeners_nest_first_registered_outermost() -> None:
    registry = ToolRegistry()
    registry.register(make_tool())
    log: list[str] = []

    def pre(label: str) -> Callable[[ToolExecution, PreExecuteNext], Awaitable[PreExecuteDecision]]:
        async def listener(_exec: ToolExecution, call_next: PreExecuteNext) -> PreExecuteDecision:
            log.append(f"{label}:before")
            decision = await call_next()
            log.append(f"{label}:after")
            return decision

        return listener

    def post(label: str) -> Callable[[ToolExecution, ToolResult, PostExecuteNext], Awaitable[PostExecuteDecision]]:
        async def listener(
            _exec: ToolExecution, _result: ToolResult, call_next: PostExecuteNext
        ) -> PostExecuteDecision:
            log.append(f"{label}:before")
            decision = await call_next()
            log.append(f"{label}:after")
            return decision

        return listener

    registry.on_pre_execute(pre("pre1"))
    registry.on_pre_execute(pre("pre2"))
    registry.on_post_execute(post("post1"))
    registry.on_post_execute(post("post2"))
    with anyio.fail_after(5):
        await registry.execute(call(CancelController().signal))
    assert log == [
        "pre1:before",
        "pre2:before",
        "pre2:after",
        "pre1:after",
        "post1:before",
        "post2:before",
        "post2:after",
        "post1:after",
    ]


@pytest.mark.anyio
async def test_a_wrapper_runs_between_pre_execute_and_post_execute_around_the_body() -> None:
    log: list[str] = []

    async def body(_args: JsonValue, _ctx: ToolRunContext) -> JsonValue:
        log.append("body")
        return "hi"

    async def pre(_exec: ToolExecution, call_next: PreExecuteNext) -> PreExecuteDecision:
        log.append("pre")
        return await call_next()

    async def wrap(_exec: ToolDispatchExecution, call_next: ExecuteNext) -> ToolResult:
        log.append("execute:before")
        result = await call_next()
        log.append("execute:after")
        return result

    async def post(_exec: ToolExecution, _result: ToolResult, call_next: PostExecuteNext) -> PostExecuteDecision:
        log.append("post")
        return await call_next()

    registry = ToolRegistry()
    registry.register(make_tool(body=body))
    registry.on_pre_execute(pre)
    registry.on_execute(wrap)
    registry.on_post_execute(post)
    with anyio.fail_after(5):
        await registry.execute(call(CancelController().signal))
    assert log == ["pre", "execute:before", "body", "execute:after", "post"]


@pytest.mark.anyio
async def test_cancelled_at_entry_skips_every_stage_but_finish() -> None:
    registry, phases = instrumented_registry()
    controller = CancelController()
    controller.cancel("early")
    with anyio.fail_after(5):
        result = await registry.execute(call(controller.signal))
    assert phases.counts() == {"pre": 0, "execute": 0, "body": 0, "post": 0, "result": 1}
    assert result.to_json() == ABORTED_BEFORE_DISPATCH
    observed_exec, observed_result = phases.observed[0]
    assert observed_result is result
    assert observed_exec.signal is controller.signal
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(observed_exec, "signal", CancelController().signal)  # noqa: B010 - proving runtime frozenness


@pytest.mark.anyio
async def test_an_argument_failure_beats_a_cancelled_signal() -> None:
    registry, phases = instrumented_registry()
    controller = CancelController()
    controller.cancel()
    with anyio.fail_after(5):
        result = await registry.execute(call(controller.signal, arguments={"x": math.inf}))
    assert result.to_json() == error_json("tool execution arguments must be losslessly JSON-serializable")
    assert phases.result == 1


@pytest.mark.anyio
async def test_cancel_while_pre_execute_awaits_aborts_before_dispatch() -> None:
    registry, phases = instrumented_registry()
    reached, release = anyio.Event(), anyio.Event()

    async def gate(_exec: ToolExecution, call_next: PreExecuteNext) -> PreExecuteDecision:
        reached.set()
        await release.wait()
        return await call_next()

    registry.on_pre_execute(gate)
    result = await run_cancelling(registry, CancelController(), reached, release)
    assert result.to_json() == ABORTED_BEFORE_DISPATCH
    assert phases.body == 0 and phases.post == 1


@pytest.mark.anyio
async def test_a_deny_settling_after_the_cancel_is_the_denial() -> None:
    registry, _ = instrumented_registry()
    reached = anyio.Event()

    async def gate(exec_: ToolExecution, _next: PreExecuteNext) -> PreExecuteDecision:
        reached.set()
        await exec_.signal.wait()
        return Deny("policy denied the call")

    registry.on_pre_execute(gate)
    result = await run_cancelling(registry, CancelController(), reached)
    assert result.to_json() == error_json("policy denied the call")


@pytest.mark.anyio
async def test_a_pre_execute_raise_after_the_cancel_is_a_final_error() -> None:
    registry, phases = instrumented_registry()
    reached = anyio.Event()

    async def gate(exec_: ToolExecution, _next: PreExecuteNext) -> PreExecuteDecision:
        reached.set()
        await exec_.signal.wait()
        raise RuntimeError("gate interrupted")

    registry.on_pre_execute(gate)
    result = await run_cancelling(registry, CancelController(), reached)
    assert result.to_json() == error_json("gate interrupted")
    assert phases.post == 0


@pytest.mark.anyio
async def test_a_wrapper_that_delegates_after_the_caller_cancelled_aborts_before_dispatch() -> None:
    registry, phases = instrumented_registry()
    reached = anyio.Event()

    async def wrap(exec_: ToolDispatchExecution, call_next: ExecuteNext) -> ToolResult:
        upstream = exec_.signal
        exec_.signal = CancelController().signal
        try:
            reached.set()
            await upstream.wait()
            return await call_next()
        finally:
            exec_.signal = upstream

    registry.on_execute(wrap)
    result = await run_cancelling(registry, CancelController(), reached)
    assert result.to_json() == ABORTED_BEFORE_DISPATCH
    assert phases.body == 0


@pytest.mark.anyio
async def test_a_wrapper_installing_an_already_cancelled_signal_aborts_before_dispatch() -> None:
    registry, phases = instrumented_registry()
    pre_cancelled = CancelController()
    pre_cancelled.cancel("wrapper")

    async def wrap(exec_: ToolDispatchExecution, call_next: ExecuteNext) -> ToolResult:
        exec_.signal = pre_cancelled.signal
        return await call_next()

    registry.on_execute(wrap)
    with anyio.fail_after(5):
        result = await registry.execute(call(CancelController().signal))
    assert result.to_json()["error"] == {
        "message": "tool call aborted before dispatch",
        "info": {"name": "AbortError", "code": "ABORTED_BEFORE_DISPATCH"},
    }
    assert phases.body == 0


@pytest.mark.anyio
async def test_a_short_circuit_success_raced_by_a_caller_cancel_aborts_before_dispatch() -> None:
    registry, phases = instrumented_registry()
    reached = anyio.Event()

    async def wrap(exec_: ToolDispatchExecution, _next: ExecuteNext) -> ToolResult:
        reached.set()
        await exec_.signal.wait()
        return ToolSuccess("cached", [])

    registry.on_execute(wrap)
    result = await run_cancelling(registry, CancelController(), reached)
    assert result.to_json() == ABORTED_BEFORE_DISPATCH
    assert phases.body == 0


@pytest.mark.anyio
async def test_a_late_wrapper_success_after_the_body_ran_and_the_caller_cancelled_is_aborted() -> None:
    registry, phases = instrumented_registry()
    reached, release = anyio.Event(), anyio.Event()

    async def wrap(_exec: ToolDispatchExecution, call_next: ExecuteNext) -> ToolResult:
        result = await call_next()
        reached.set()
        await release.wait()
        return result

    registry.on_execute(wrap)
    result = await run_cancelling(registry, CancelController(), reached, release)
    assert result.to_json() == ABORTED
    assert phases.body == 1


@pytest.mark.anyio
async def test_a_late_post_execute_accept_after_the_cancel_is_aborted() -> None:
    registry, _ = instrumented_registry()
    reached = anyio.Event()

    async def post(exec_: ToolExecution, _result: ToolResult, _next: PostExecuteNext) -> PostExecuteDecision:
        reached.set()
        await exec_.signal.wait()
        return Accept()

    registry.on_post_execute(post)
    result = await run_cancelling(registry, CancelController(), reached)
    assert result.to_json() == ABORTED


@pytest.mark.anyio
async def test_a_wrapper_raise_after_the_cancel_is_a_final_error_without_body_or_post() -> None:
    registry, phases = instrumented_registry()
    reached = anyio.Event()

    async def wrap(exec_: ToolDispatchExecution, _next: ExecuteNext) -> ToolResult:
        reached.set()
        await exec_.signal.wait()
        raise CodedError("wrapper failed", code="WRAPPER_FAILURE")

    registry.on_execute(wrap)
    result = await run_cancelling(registry, CancelController(), reached)
    assert result.to_json() == error_json("wrapper failed", "CodedError", "WRAPPER_FAILURE")
    assert phases.body == 0 and phases.post == 0


@pytest.mark.anyio
async def test_a_body_failure_after_it_observed_the_cancel_is_kept() -> None:
    reached = anyio.Event()

    async def body(_args: JsonValue, ctx: ToolRunContext) -> JsonValue:
        reached.set()
        await ctx.signal.wait()
        raise CodedError("stopped", code="TOOL_FAILURE")

    registry, _ = instrumented_registry(body)
    result = await run_cancelling(registry, CancelController(), reached)
    assert result.to_json() == error_json("stopped", "CodedError", "TOOL_FAILURE")


@pytest.mark.anyio
async def test_a_post_execute_raise_after_the_cancel_is_kept() -> None:
    registry, _ = instrumented_registry()
    reached = anyio.Event()

    async def post(exec_: ToolExecution, _result: ToolResult, _next: PostExecuteNext) -> PostExecuteDecision:
        reached.set()
        await exec_.signal.wait()
        raise CodedError("post failed", code="POST_FAILURE")

    registry.on_post_execute(post)
    result = await run_cancelling(registry, CancelController(), reached)
    assert result.to_json() == error_json("post failed", "CodedError", "POST_FAILURE")


@pytest.mark.anyio
async def test_the_body_gets_a_fused_signal_that_follows_the_caller_but_not_back_into_the_wrapper() -> None:
    reached = anyio.Event()
    wrapper_controller = CancelController()
    body_signals: list[CancelSignal] = []

    async def body(_args: JsonValue, ctx: ToolRunContext) -> JsonValue:
        body_signals.append(ctx.signal)
        reached.set()
        await ctx.signal.wait()
        return "hi"

    registry, _ = instrumented_registry(body)

    async def wrap(exec_: ToolDispatchExecution, call_next: ExecuteNext) -> ToolResult:
        upstream = exec_.signal
        exec_.signal = wrapper_controller.signal
        try:
            return await call_next()
        finally:
            exec_.signal = upstream

    registry.on_execute(wrap)
    controller = CancelController()
    result = await run_cancelling(registry, controller, reached)
    (body_signal,) = body_signals
    assert body_signal is not controller.signal and body_signal is not wrapper_controller.signal
    assert body_signal.cancelled and body_signal.reason == "user"
    assert not wrapper_controller.signal.cancelled
    assert result.to_json() == ABORTED


@pytest.mark.anyio
async def test_post_execute_sees_the_callers_exact_signal_after_a_wrapper_swapped_it() -> None:
    registry, phases = instrumented_registry()
    wrapper_signals: list[CancelSignal] = []

    async def wrap(exec_: ToolDispatchExecution, call_next: ExecuteNext) -> ToolResult:
        upstream = exec_.signal
        exec_.signal = CancelController().signal
        try:
            result = await call_next()
            wrapper_signals.append(exec_.signal)
            return result
        finally:
            exec_.signal = upstream

    registry.on_execute(wrap)
    controller = CancelController()
    with anyio.fail_after(5):
        result = await registry.execute(call(controller.signal))
    assert result.to_json() == HI
    assert phases.post_signals == [controller.signal]
    assert wrapper_signals[0] is not controller.signal  # dispatch restored the wrapper's own assignment


@pytest.mark.anyio
async def test_without_a_swapping_wrapper_the_body_gets_the_callers_exact_signal() -> None:
    seen: list[CancelSignal] = []

    async def body(_args: JsonValue, ctx: ToolRunContext) -> JsonValue:
        seen.append(ctx.signal)
        return "hi"

    registry, _ = instrumented_registry(body)
    controller = CancelController()
    with anyio.fail_after(5):
        await registry.execute(call(controller.signal))
    assert seen == [controller.signal]


@pytest.mark.anyio
async def test_an_uncooperative_body_is_awaited_to_quiescence_and_then_aborted() -> None:
    started, release = anyio.Event(), anyio.Event()

    async def body(_args: JsonValue, _ctx: ToolRunContext) -> JsonValue:
        started.set()
        await release.wait()
        return "hi"

    registry, _ = instrumented_registry(body)
    controller = CancelController()
    results: list[ToolResult] = []

    async def run() -> None:
        results.append(await registry.execute(call(controller.signal)))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await started.wait()
            controller.cancel("user")
            await anyio.wait_all_tasks_blocked()
            assert results == []
            release.set()
    assert results[0].to_json() == ABORTED


@pytest.mark.anyio
async def test_anyio_cancellation_of_the_caller_lands_only_after_the_call_settled() -> None:
    started, release = anyio.Event(), anyio.Event()

    async def body(_args: JsonValue, _ctx: ToolRunContext) -> JsonValue:
        started.set()
        await release.wait()
        return "hi"

    registry, phases = instrumented_registry(body)
    results: list[ToolResult] = []
    caller_scope = anyio.CancelScope()

    async def caller() -> None:
        with caller_scope:
            results.append(await registry.execute(call(CancelController().signal)))
            await anyio.lowlevel.checkpoint()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(caller)
            await started.wait()
            caller_scope.cancel()
            await anyio.wait_all_tasks_blocked()
            assert results == []
            release.set()
    assert [r.to_json() for r in results] == [HI]
    assert caller_scope.cancelled_caught
    assert phases.result == 1
