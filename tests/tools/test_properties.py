"""Property: any interleaving of caller aborts, wrapper swaps, timeouts, denials and body outcomes keeps the
registry's invariants (one result, observers once, ABORTED iff the body ran, quiescence, signal restoration).

Driven with ``anyio.run`` on trio with ``MockClock(autojump_threshold=0)``: timers fire as soon as every task is
blocked, so budgets cost no wall-clock time and runs stay deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trio.testing import MockClock

from host._exceptions import CodedError
from host._json import ContentBlock, JsonValue
from host.cancel import CancelController, CancelSignal, fuse
from host.tools import ToolFailure, ToolRegistry, ToolResult, ToolRunContext, ToolSuccess, install_timeout_policy
from host.tools._types import (
    Allow,
    Deny,
    ExecuteNext,
    PostExecuteDecision,
    PostExecuteNext,
    PreExecuteDecision,
    PreExecuteNext,
    ToolDispatchExecution,
    ToolExecution,
)
from tests.tools._registry_helpers import call, make_tool

Stage = Literal["never", "entry", "pre", "wrapper-before", "body", "wrapper-after", "post"]


@dataclass(frozen=True)
class Plan:
    cancel_at: Stage
    pre: Literal["allow", "deny", "raise"]
    swap: Literal["none", "fresh", "pre-cancelled"]
    short_circuit: bool
    timeout_ms: float | None
    body: Literal["return", "raise", "cooperative-return", "cooperative-raise"]


plans = st.builds(
    Plan,
    cancel_at=st.sampled_from(["never", "entry", "pre", "wrapper-before", "body", "wrapper-after", "post"]),
    pre=st.sampled_from(["allow", "allow", "deny", "raise"]),
    swap=st.sampled_from(["none", "fresh", "pre-cancelled"]),
    short_circuit=st.booleans(),
    timeout_ms=st.one_of(st.none(), st.sampled_from([1.0, 7.5, 40.0])),
    body=st.sampled_from(["return", "raise", "cooperative-return", "cooperative-raise"]),
)


@dataclass
class Trace:
    body_started: bool = False
    body_finished: bool = False
    finalized: int = 0
    observed: list[tuple[ToolExecution, ToolResult]] = field(default_factory=lambda: [])
    post_signals: list[CancelSignal] = field(default_factory=lambda: [])
    wrapper_restored: list[bool] = field(default_factory=lambda: [])


async def _run_plan(plan: Plan) -> tuple[ToolResult, Trace, CancelController]:
    controller = CancelController()
    trace = Trace()

    def cancel_if(stage: Stage) -> None:
        if plan.cancel_at == stage:
            controller.cancel(f"cancelled at {stage}")

    async def body(_args: JsonValue, ctx: ToolRunContext) -> JsonValue:
        trace.body_started = True
        try:
            cancel_if("body")
            # Wait on the signal only when something is guaranteed to fire it.
            will_fire = plan.timeout_ms is not None or plan.cancel_at == "body" or ctx.signal.cancelled
            if plan.body.startswith("cooperative") and will_fire:
                await ctx.signal.wait()
            else:
                await anyio.lowlevel.checkpoint()
            if plan.body.endswith("raise"):
                raise CodedError("tool failed", code="TOOL_FAILURE")
            return "hi"
        finally:
            trace.body_finished = True

    def finalize(_exec: ToolExecution, _result: ToolResult) -> list[ContentBlock] | None:
        trace.finalized += 1
        return None

    registry = ToolRegistry()
    install_timeout_policy(registry)
    registry.register(make_tool(body=body, timeout_ms=plan.timeout_ms, finalize_content=finalize))

    async def pre(_exec: ToolExecution, call_next: PreExecuteNext) -> PreExecuteDecision:
        await anyio.lowlevel.checkpoint()
        cancel_if("pre")
        if plan.pre == "deny":
            return Deny("denied by policy")
        if plan.pre == "raise":
            raise RuntimeError("gate broke")
        decision = await call_next()
        assert isinstance(decision, Allow)
        return decision

    async def wrap(exec_: ToolDispatchExecution, call_next: ExecuteNext) -> ToolResult:
        upstream = exec_.signal
        installed = upstream
        dispose = _noop
        if plan.swap == "fresh":
            # A well-behaved wrapper derives from its upstream, so an outer deadline still reaches the body.
            installed, dispose = fuse(upstream, CancelController().signal)
        elif plan.swap == "pre-cancelled":
            cancelled = CancelController()
            cancelled.cancel("wrapper")
            installed = cancelled.signal
        exec_.signal = installed
        try:
            cancel_if("wrapper-before")
            await anyio.lowlevel.checkpoint()
            if plan.short_circuit:
                result: ToolResult = ToolSuccess("cached", [])
            else:
                result = await call_next()
                trace.wrapper_restored.append(exec_.signal is installed)
            cancel_if("wrapper-after")
            return result
        finally:
            exec_.signal = upstream
            dispose()

    async def post(exec_: ToolExecution, _result: ToolResult, call_next: PostExecuteNext) -> PostExecuteDecision:
        trace.post_signals.append(exec_.signal)
        cancel_if("post")
        await anyio.lowlevel.checkpoint()
        return await call_next()

    registry.on_pre_execute(pre)
    registry.on_execute(wrap)
    registry.on_post_execute(post)
    registry.on_result(lambda exec_, result: trace.observed.append((exec_, result)))
    cancel_if("entry")
    with anyio.fail_after(60):  # mock-clock seconds: only a hang would reach this
        result = await registry.execute(call(controller.signal))
    return result, trace, controller


def _noop() -> None:
    return None


def _code(result: ToolResult) -> str | None:
    if isinstance(result, ToolFailure) and result.error.info is not None:
        return result.error.info.code
    return None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=plans)
def test_every_interleaving_keeps_the_registry_invariants(plan: Plan) -> None:
    async def main() -> tuple[ToolResult, Trace, CancelController]:
        return await _run_plan(plan)

    result, trace, controller = anyio.run(
        main, backend="trio", backend_options={"clock": MockClock(autojump_threshold=0)}
    )
    code = _code(result)
    # Exactly one result, published once, finalized once.
    assert len(trace.observed) == 1
    assert trace.observed[0][1] is result
    assert trace.finalized == 1
    # The dispatch code records whether the body ran; a started body was awaited to completion.
    assert trace.body_finished == trace.body_started
    if code == "ABORTED":
        assert trace.body_started
    if code == "ABORTED_BEFORE_DISPATCH":
        assert not trace.body_started
    if code == "TOOL_TIMEOUT":
        assert plan.timeout_ms is not None
    # Post-execute always borrows the caller's exact signal; dispatch restores a wrapper's own assignment.
    assert all(signal is controller.signal for signal in trace.post_signals)
    assert all(trace.wrapper_restored)
    # Precedence spot checks.
    if plan.cancel_at == "entry":
        assert code == "ABORTED_BEFORE_DISPATCH" and not trace.post_signals
    elif plan.pre == "deny":
        assert isinstance(result, ToolFailure) and result.error.message == "denied by policy"
    elif plan.pre == "raise":
        assert isinstance(result, ToolFailure) and result.error.message == "gate broke"
        assert not trace.post_signals
    if isinstance(result, ToolSuccess):
        assert not controller.signal.cancelled
