"""The tool registry: registration and the five-stage call pipeline of docs/behaviour.md#registry-registration to
#registry-quiescence.

``execute`` always returns exactly one result, published once to the result observers. The caller's signal is
captured outside every view; a started body (and every gate, wrapper and listener) is awaited to completion under
an anyio shield, and cancellation is classified only after each stage settles: ``ABORTED`` if the body was
invoked, ``ABORTED_BEFORE_DISPATCH`` if not.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Final, cast

import anyio

from host._exceptions import ToolNotFoundError
from host._json import ContentBlock
from host.cancel import MAX_TIMER_DELAY_MS, CancelSignal, fuse
from host.tools._hooks import Hooks as _Hooks
from host.tools._results import (
    aborted_before_dispatch_result,
    aborted_result,
    build_success,
    exception_text,
    failure_result,
    tool_failure_from_exception,
)
from host.tools._results import (
    block_message as _block_message,
)
from host.tools._results import (
    json_text as _json_text,
)
from host.tools._results import (
    materialize as _materialize,
)
from host.tools._snapshot import NOT_LOSSLESS, snapshot_json
from host.tools._types import (
    Accept,
    Allow,
    ApprovalRequest,
    ApprovalService,
    Ask,
    Block,
    Deny,
    ExecuteWrapper,
    FinalizeContent,
    PostExecuteDecision,
    PostExecuteListener,
    PreExecuteDecision,
    PreExecuteListener,
    ResultObserver,
    ToolDefinition,
    ToolDispatchExecution,
    ToolError,
    ToolExecution,
    ToolExecutionInput,
    ToolFailure,
    ToolResult,
    ToolRunContext,
    ToolSuccess,
    valid_timeout_ms,
)

__all__ = ["ToolRegistry"]

logger = logging.getLogger(__name__)

ARGUMENTS_NOT_LOSSLESS_MESSAGE: Final = "tool execution arguments must be losslessly JSON-serializable"
NEXT_CALLED_TWICE_MESSAGE: Final = "tools/execute next() called more than once"
ACCEPT_BOTH_MESSAGE: Final = "tools/post-execute accept decision cannot replace both value and content"
ACCEPT_VALUE_ON_FAILURE_MESSAGE: Final = "tools/post-execute cannot replace the value of a failed result"


@dataclass(slots=True)
class _CallState:
    """Private per-call bookkeeping, kept outside every view the stages see."""

    caller_signal: CancelSignal
    body_invoked: bool = False
    minted: ToolResult | None = None
    """The result object this call's own dispatch produced."""


class ToolRegistry:
    """Registers tools and runs calls through pre-execute, ``tools/execute``, post-execute and finish."""

    def __init__(self, *, approval: ApprovalService | None = None) -> None:
        """Create an empty registry.

        Args:
            approval: The seam that resolves ``Ask``; without one, ``Ask`` becomes a denial.
        """
        self._approval = approval
        self._tools: dict[str, ToolDefinition] = {}
        self._pre_hooks: _Hooks[PreExecuteListener] = _Hooks()
        self._execute_hooks: _Hooks[ExecuteWrapper] = _Hooks()
        self._post_hooks: _Hooks[PostExecuteListener] = _Hooks()
        self._result_hooks: _Hooks[ResultObserver] = _Hooks()

    # --- registration ---------------------------------------------------------------------------------------------

    def register(self, definition: ToolDefinition) -> Callable[[], None]:
        """Register ``definition``; return an idempotent ``unregister``.

        Raises:
            ValueError: No ``output``, an out-of-range ``timeout_ms``, or a duplicate name (exact texts of
            docs/behaviour.md#registry-registration).
        """
        name = definition.name
        if cast("object", definition.output) is None:
            raise ValueError(f'tool "{name}" must declare output {{ schema, render }}')
        if not valid_timeout_ms(definition.timeout_ms):
            raise ValueError(
                f'tool "{name}" timeout_ms must be a positive finite number no greater than {MAX_TIMER_DELAY_MS}'
            )
        if name in self._tools:
            raise ValueError(f'tool "{name}" is already registered')
        self._tools[name] = definition

        def unregister() -> None:
            if self._tools.get(name) is definition:
                del self._tools[name]

        return unregister

    def get(self, name: str) -> ToolDefinition | None:
        """Return the current definition named ``name``, or ``None``."""
        return self._tools.get(name)

    def schemas(self) -> list[dict[str, Any]]:
        """Project every tool to ``{name, description, parameters}``: what the model may see."""
        return [
            {"name": d.name, "description": d.description, "parameters": copy.deepcopy(dict(d.parameters))}
            for d in self._tools.values()
        ]

    def on_pre_execute(self, listener: PreExecuteListener) -> Callable[[], None]:
        """Add a pre-execute listener (first registered is outermost); return its remover."""
        return self._pre_hooks.add(listener)

    def on_execute(self, wrapper: ExecuteWrapper) -> Callable[[], None]:
        """Add a ``tools/execute`` wrapper (first registered is outermost); return its remover."""
        return self._execute_hooks.add(wrapper)

    def on_post_execute(self, listener: PostExecuteListener) -> Callable[[], None]:
        """Add a post-execute listener (first registered is outermost); return its remover."""
        return self._post_hooks.add(listener)

    def on_result(self, observer: ResultObserver) -> Callable[[], None]:
        """Add a synchronous result observer; return its remover."""
        return self._result_hooks.add(observer)

    # --- the pipeline ---------------------------------------------------------------------------------------------

    async def execute(self, input: ToolExecutionInput) -> ToolResult:
        """Run one call to its single result; cancel it through ``input.signal``.

        The awaits are shielded: an anyio cancellation of the calling task takes effect only after the call settled.
        """
        with anyio.CancelScope(shield=True):
            return await self._run(input)
        # Nothing cancels a shielded scope from outside, so it never swallows the return above.
        raise AssertionError("unreachable")

    async def _run(self, input: ToolExecutionInput) -> ToolResult:
        # A. Create the execution: the finalizer is captured before the arguments are touched.
        token = object()
        entry_definition = self._tools.get(input.name)
        finalizer = entry_definition.finalize_content if entry_definition is not None else None
        state = _CallState(caller_signal=input.signal)
        try:
            arguments = snapshot_json(input.arguments)
        except Exception as exc:
            execution = _execution_of(input, None, token)
            return self._finish(execution, tool_failure_from_exception(exc), finalizer)
        if arguments is NOT_LOSSLESS:
            execution = _execution_of(input, None, token)
            return self._finish(execution, failure_result(ARGUMENTS_NOT_LOSSLESS_MESSAGE), finalizer)
        execution = _execution_of(input, arguments, token)

        # B. Prepare.
        if state.caller_signal.cancelled:
            return self._finish(execution, aborted_before_dispatch_result(), finalizer)
        try:
            decision, approval_cancelled = await self._prepare(execution)
        except Exception as exc:
            return self._finish(execution, tool_failure_from_exception(exc), finalizer)
        if state.caller_signal.cancelled and approval_cancelled:
            result: ToolResult = aborted_before_dispatch_result()
        elif isinstance(decision, Deny):
            result = failure_result(decision.reason)
        elif state.caller_signal.cancelled:
            result = aborted_before_dispatch_result()
        else:
            # C. Dispatch.
            try:
                result = await self._dispatch(execution, state)
            except Exception as exc:
                return self._finish(execution, tool_failure_from_exception(exc), finalizer)

        # D. Post-execute.
        result = await self._post_execute(execution, result, state)
        return self._finish(execution, result, finalizer)

    async def _prepare(self, execution: ToolExecution) -> tuple[Allow | Deny, bool]:
        """Run the pre-execute waterfall and resolve ``Ask``; return ``(decision, approval_cancelled)``."""
        listeners = self._pre_hooks.snapshot()
        if not listeners:
            return Allow(), False

        async def step(index: int) -> PreExecuteDecision:
            if index == len(listeners):
                return Allow()
            return await listeners[index](execution, lambda: step(index + 1))

        # Typed as object: an untyped listener may return anything, and that must fail loudly here.
        decision = cast("object", await step(0))
        if isinstance(decision, Allow | Deny):
            return decision, False
        if isinstance(decision, Ask):
            return await self._resolve_ask(execution, decision)
        raise TypeError(f"unreachable variant in PreExecuteDecision: {decision!r}")

    async def _resolve_ask(self, execution: ToolExecution, ask: Ask) -> tuple[Allow | Deny, bool]:
        name = execution.name
        if self._approval is None:
            return Deny(ask.reason or f'tool "{name}" requires approval (not yet supported)'), False
        if execution.agent is None:
            return Deny(f'tool "{name}" requires approval, but the call has no agent to route it through'), False
        request = ApprovalRequest(
            agent=execution.agent,
            tool_name=name,
            call_id=execution.call_id,
            reason=ask.reason,
            signal=execution.signal,
        )
        outcome: object = await self._approval.request(request)
        if outcome == "allowed-once":
            return Allow(), False
        if outcome == "rejected":
            return Deny(f'the user rejected tool "{name}"'), False
        if outcome == "cancelled":
            return Deny(f'approval for tool "{name}" was cancelled'), True
        if outcome == "unavailable":
            return Deny(f'tool "{name}" requires approval, but no approval channel is available'), False
        raise RuntimeError(f"unreachable variant in ApprovalOutcome: {_json_text(outcome)}")

    async def _dispatch(self, execution: ToolExecution, state: _CallState) -> ToolResult:
        """Run the ``tools/execute`` waterfall around dispatch and normalize what it returns
        (docs/behaviour.md#registry-pipeline C)."""
        wrappers = self._execute_hooks.snapshot()
        live = ToolDispatchExecution(execution)

        def next_for(index: int) -> Callable[[], Any]:
            called = False

            async def call_next() -> ToolResult:
                nonlocal called
                if called:
                    raise RuntimeError(NEXT_CALLED_TWICE_MESSAGE)
                called = True
                if index == len(wrappers):
                    return await self._dispatch_normalized(live, state)
                return await wrappers[index](live, next_for(index + 1))

            return call_next

        returned: object = await next_for(0)()
        result = self._normalize(execution, returned, state)
        return _unless_cancelled(result, state)

    async def _dispatch_normalized(self, live: ToolDispatchExecution, state: _CallState) -> ToolResult:
        """The innermost ``next()``: fuse, invoke the body, await it to completion, never raise an ``Exception``."""
        wrapper_signal = live.signal
        fused, dispose = fuse(wrapper_signal, state.caller_signal)
        try:
            if fused.cancelled:
                result: ToolResult = aborted_before_dispatch_result()
            else:
                live.signal = fused
                try:
                    result = await self._invoke_body(live, fused, state)
                finally:
                    live.signal = wrapper_signal
        finally:
            dispose()
        state.minted = result
        return result

    async def _invoke_body(self, live: ToolDispatchExecution, fused: CancelSignal, state: _CallState) -> ToolResult:
        definition = self._tools.get(live.name)
        if definition is None:
            return tool_failure_from_exception(ToolNotFoundError(f'unknown tool "{live.name}"'))
        context = ToolRunContext(
            call_id=live.call_id, name=live.name, arguments=live.arguments, agent=live.agent, signal=fused
        )
        state.body_invoked = True
        try:
            value: object = await definition.execute(live.arguments, context)
        except Exception as exc:
            # A tool's own failure is never replaced by a cancellation code.
            return tool_failure_from_exception(exc)
        result = build_success(live.name, definition, live.arguments, value)
        if fused.cancelled and isinstance(result, ToolSuccess):
            return aborted_result()
        return result

    def _normalize(self, execution: ToolExecution, returned: object, state: _CallState) -> ToolResult:
        if returned is state.minted and isinstance(returned, ToolSuccess | ToolFailure):
            return returned
        if isinstance(returned, ToolFailure):
            return ToolFailure(ToolError(returned.error.message, returned.error.info), list(returned.content))
        if isinstance(returned, ToolSuccess):
            # The wrapper's own content is ignored: a success is re-rendered by the current definition.
            return build_success(execution.name, self._tools.get(execution.name), execution.arguments, returned.value)
        raise TypeError(f"tools/execute wrapper returned a non-result: {type(returned).__name__}")

    async def _post_execute(self, execution: ToolExecution, result: ToolResult, state: _CallState) -> ToolResult:
        """Run the post-execute waterfall and apply its decision (docs/behaviour.md#registry-pipeline D); a raise
        becomes an error result."""
        listeners = self._post_hooks.snapshot()
        if not listeners:  # the waterfall's end accepts the result as it is
            return _unless_cancelled(result, state)

        async def step(index: int) -> PostExecuteDecision:
            if index == len(listeners):
                return Accept()
            return await listeners[index](execution, result, lambda: step(index + 1))

        try:
            decision = await step(0)
            outcome = self._apply_post_decision(execution, result, decision)
        except Exception as exc:
            return tool_failure_from_exception(exc)
        return _unless_cancelled(outcome, state)

    def _apply_post_decision(self, execution: ToolExecution, result: ToolResult, decision: object) -> ToolResult:
        if isinstance(decision, Block):
            return ToolFailure(ToolError(_block_message(decision.feedback)), list(decision.feedback))
        if not isinstance(decision, Accept):
            raise TypeError(f"unreachable variant in PostExecuteDecision: {decision!r}")
        if decision.replaces_value:
            if decision.content is not None:
                raise RuntimeError(ACCEPT_BOTH_MESSAGE)
            if isinstance(result, ToolFailure):
                raise RuntimeError(ACCEPT_VALUE_ON_FAILURE_MESSAGE)
            return build_success(execution.name, self._tools.get(execution.name), execution.arguments, decision.value)
        if decision.content is not None:
            return replace(result, content=list(decision.content))
        return result

    # --- finish ---------------------------------------------------------------------------------------------------

    def _finish(self, execution: ToolExecution, candidate: ToolResult, finalizer: FinalizeContent | None) -> ToolResult:
        """Materialize, run ``finalize_content`` exactly once, publish to observers, return what they saw
        (docs/behaviour.md#registry-pipeline E)."""
        result = _materialize(candidate)
        if finalizer is not None:
            try:
                # The finalizer gets its own copy: in-place edits must not leak into a ``None`` ("keep") answer.
                content = finalizer(execution, _materialize(result))
            except Exception as exc:
                result = _materialize(tool_failure_from_exception(exc))
            else:
                if content is not None:
                    result = _materialize(replace(result, content=cast("list[ContentBlock]", content)))
        for observer in self._result_hooks.snapshot():
            try:
                observer(execution, result)
            except Exception as exc:  # containment boundary: observers cannot change the outcome
                logger.warning(
                    'tool "%s" (%s): tools/result observer failed: %s',
                    execution.name,
                    execution.call_id,
                    exception_text(exc),
                )
        return result


def _unless_cancelled(result: ToolResult, state: _CallState) -> ToolResult:
    """``result``, or the abort its caller's cancel turns a success into (docs/behaviour.md#registry-pipeline)."""
    if state.caller_signal.cancelled and isinstance(result, ToolSuccess):
        return aborted_result() if state.body_invoked else aborted_before_dispatch_result()
    return result


def _execution_of(input: ToolExecutionInput, arguments: Any, token: object) -> ToolExecution:
    return ToolExecution(
        call_id=input.call_id,
        name=input.name,
        arguments=arguments,
        signal=input.signal,
        agent=input.agent,
        token=token,
    )
