"""Wrapper normalization, post-execute decisions and finish (docs/behaviour.md#registry-pipeline C–E; scenarios
43–64)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import anyio
import pytest
from pydantic import TypeAdapter

from host._exceptions import CodedError
from host._json import ContentBlock, JsonValue
from host.cancel import CancelController
from host.tools import ToolRegistry, ToolResult, ToolRunContext, ToolSuccess
from host.tools._types import (
    Accept,
    Block,
    Deny,
    ExecuteNext,
    PostExecuteDecision,
    PostExecuteNext,
    PreExecuteDecision,
    PreExecuteNext,
    ToolDispatchExecution,
    ToolExecution,
    ToolOutput,
)
from tests.tools._registry_helpers import (
    ABORTED_BEFORE_DISPATCH,
    HI,
    call,
    error_json,
    instrumented_registry,
    make_tool,
    text,
)

IMAGE: ContentBlock = {"type": "image", "data": "AAAA", "mimeType": "image/png"}


async def _execute(registry: ToolRegistry) -> ToolResult:
    with anyio.fail_after(5):
        return await registry.execute(call(CancelController().signal))


def _post(
    decision: PostExecuteDecision,
) -> Callable[[ToolExecution, ToolResult, PostExecuteNext], Awaitable[PostExecuteDecision]]:
    async def listener(_exec: ToolExecution, _result: ToolResult, _next: PostExecuteNext) -> PostExecuteDecision:
        return decision

    return listener


@pytest.mark.anyio
async def test_a_pre_execute_deny_never_reaches_the_wrapper() -> None:
    registry, phases = instrumented_registry()

    async def deny(_exec: ToolExecution, _next: PreExecuteNext) -> PreExecuteDecision:
        return Deny("no")

    registry.on_pre_execute(deny)
    await _execute(registry)
    assert phases.execute == 0


@pytest.mark.anyio
async def test_a_raising_body_is_normalized_before_the_wrappers_next_returns() -> None:
    async def body(_args: JsonValue, _ctx: ToolRunContext) -> JsonValue:
        raise CodedError("kaboom", code="BOOM")

    registry, phases = instrumented_registry(body)
    seen: list[dict[str, object]] = []

    async def wrap(_exec: ToolDispatchExecution, call_next: ExecuteNext) -> ToolResult:
        result = await call_next()
        seen.append(result.to_json())
        return result

    registry.on_execute(wrap)
    result = await _execute(registry)
    assert seen == [error_json("kaboom", "CodedError", "BOOM")]
    assert result.to_json() == error_json("kaboom", "CodedError", "BOOM")
    assert phases.post == 1


@pytest.mark.anyio
async def test_a_wrapper_success_without_next_is_re_rendered_from_its_value() -> None:
    registry, phases = instrumented_registry()

    async def wrap(_exec: ToolDispatchExecution, _next: ExecuteNext) -> ToolResult:
        return ToolSuccess("cached", [text("wrapper's own content")])

    registry.on_execute(wrap)
    result = await _execute(registry)
    assert result.to_json() == {"is_error": False, "value": "cached", "content": [text("cached")]}
    assert phases.body == 0


@pytest.mark.anyio
async def test_a_foreign_success_that_no_longer_matches_the_schema_is_invalid_output() -> None:
    async def int_body(_args: JsonValue, _ctx: ToolRunContext) -> JsonValue:
        return 7

    registry = ToolRegistry()
    unregister = registry.register(
        make_tool(body=int_body, output=ToolOutput(TypeAdapter(int), lambda _a, v: [text(str(v))]))
    )
    foreign = await _execute(registry)
    assert isinstance(foreign, ToolSuccess) and foreign.value == 7
    unregister()
    registry.register(make_tool())

    async def wrap(_exec: ToolDispatchExecution, _next: ExecuteNext) -> ToolResult:
        return foreign

    registry.on_execute(wrap)
    result = await _execute(registry)
    assert result.to_json() == error_json(
        'tool "t" returned invalid output: "value" Input should be a valid string',
        "ToolOutputError",
        "INVALID_TOOL_OUTPUT",
    )


@pytest.mark.anyio
async def test_a_wrapper_success_after_the_tool_was_unregistered_is_unknown_tool() -> None:
    registry = ToolRegistry()
    unregister = registry.register(make_tool())

    async def wrap(_exec: ToolDispatchExecution, _next: ExecuteNext) -> ToolResult:
        unregister()
        return ToolSuccess("hi", [text("hi")])

    registry.on_execute(wrap)
    result = await _execute(registry)
    assert result.to_json() == error_json('unknown tool "t"', "ToolNotFoundError", "UNKNOWN_TOOL")


@pytest.mark.anyio
async def test_a_raising_wrapper_is_a_final_error_without_post_execute() -> None:
    registry, phases = instrumented_registry()

    async def wrap(_exec: ToolDispatchExecution, _next: ExecuteNext) -> ToolResult:
        raise RuntimeError("wrapper broke")

    registry.on_execute(wrap)
    result = await _execute(registry)
    assert result.to_json() == error_json("wrapper broke")
    assert phases.post == 0 and phases.result == 1


@pytest.mark.anyio
async def test_calling_next_twice_is_a_wrapper_failure() -> None:
    registry, phases = instrumented_registry()

    async def wrap(_exec: ToolDispatchExecution, call_next: ExecuteNext) -> ToolResult:
        await call_next()
        return await call_next()

    registry.on_execute(wrap)
    result = await _execute(registry)
    assert result.to_json() == error_json("tools/execute next() called more than once")
    assert phases.body == 1


@pytest.mark.anyio
async def test_post_accept_with_content_replaces_only_the_content() -> None:
    registry, _ = instrumented_registry()
    registry.on_post_execute(_post(Accept(content=[text("short")])))
    result = await _execute(registry)
    assert result.to_json() == {"is_error": False, "value": "hi", "content": [text("short")]}


@pytest.mark.anyio
async def test_post_accept_with_a_value_rebuilds_value_and_content() -> None:
    registry, _ = instrumented_registry()
    registry.on_post_execute(_post(Accept(value="new")))
    result = await _execute(registry)
    assert result.to_json() == {"is_error": False, "value": "new", "content": [text("new")]}


@pytest.mark.anyio
async def test_post_accept_with_both_value_and_content_is_an_error() -> None:
    registry, _ = instrumented_registry()
    registry.on_post_execute(_post(Accept(content=[text("c")], value="v")))
    result = await _execute(registry)
    assert result.to_json() == error_json("tools/post-execute accept decision cannot replace both value and content")


@pytest.mark.anyio
async def test_post_accept_with_a_value_against_the_schema_is_invalid_output() -> None:
    registry, _ = instrumented_registry()
    registry.on_post_execute(_post(Accept(value=1)))
    result = await _execute(registry)
    assert result.to_json() == error_json(
        'tool "t" returned invalid output: "value" Input should be a valid string',
        "ToolOutputError",
        "INVALID_TOOL_OUTPUT",
    )


@pytest.mark.anyio
async def test_post_accept_with_a_value_on_a_failed_result_is_an_error() -> None:
    async def body(_args: JsonValue, _ctx: ToolRunContext) -> JsonValue:
        raise RuntimeError("failed")

    registry, _ = instrumented_registry(body)
    registry.on_post_execute(_post(Accept(value="x")))
    result = await _execute(registry)
    assert result.to_json() == error_json("tools/post-execute cannot replace the value of a failed result")


@pytest.mark.anyio
async def test_post_accept_with_a_value_after_unregistering_is_unknown_tool() -> None:
    registry = ToolRegistry()
    unregister = registry.register(make_tool())

    async def post(_exec: ToolExecution, _result: ToolResult, _next: PostExecuteNext) -> PostExecuteDecision:
        unregister()
        return Accept(value="x")

    registry.on_post_execute(post)
    result = await _execute(registry)
    assert result.to_json() == error_json('unknown tool "t"', "ToolNotFoundError", "UNKNOWN_TOOL")


@pytest.mark.anyio
async def test_post_block_replaces_the_result_with_a_feedback_failure() -> None:
    registry, _ = instrumented_registry()
    registry.on_post_execute(_post(Block([text("no")])))
    result = await _execute(registry)
    assert result.to_json() == {"is_error": True, "error": {"message": "no"}, "content": [text("no")]}


@pytest.mark.parametrize(
    ("feedback", "message"),
    [
        ([], "tool result blocked by post-execute policy"),
        ([IMAGE], "[image content]"),
        ([text("a"), IMAGE], "a\n[image content]"),
    ],
)
@pytest.mark.anyio
async def test_block_messages_join_text_and_name_other_blocks(feedback: list[ContentBlock], message: str) -> None:
    registry, _ = instrumented_registry()
    registry.on_post_execute(_post(Block(feedback)))
    result = await _execute(registry)
    assert result.to_json() == {"is_error": True, "error": {"message": message}, "content": feedback}


@pytest.mark.anyio
async def test_block_feedback_that_is_not_lossless_fails_materialization() -> None:
    registry, _ = instrumented_registry()
    registry.on_post_execute(_post(Block([{"type": "text", "text": "x", "bad": {1}}])))
    result = await _execute(registry)
    assert result.to_json() == error_json("tool result must be losslessly JSON-serializable")


def _finalizer_tool(
    registry: ToolRegistry,
    finalize: Callable[[ToolExecution, ToolResult], list[ContentBlock] | None],
    body: Callable[[JsonValue, ToolRunContext], Awaitable[JsonValue]] | None = None,
) -> list[ToolResult]:
    calls: list[ToolResult] = []

    def finalize_content(exec_: ToolExecution, result: ToolResult) -> list[ContentBlock] | None:
        calls.append(result)
        return finalize(exec_, result)

    definition = make_tool(finalize_content=finalize_content)
    if body is not None:
        definition = make_tool(body=body, finalize_content=finalize_content)
    registry.register(definition)
    return calls


@pytest.mark.anyio
async def test_finalize_content_can_truncate_content_but_not_change_the_error() -> None:
    async def body(_args: JsonValue, _ctx: ToolRunContext) -> JsonValue:
        return 1

    def truncate(_exec: ToolExecution, result: ToolResult) -> list[ContentBlock] | None:
        return [text(result.content[0]["text"][:32])]

    registry = ToolRegistry()
    calls = _finalizer_tool(registry, truncate, body)
    result = await _execute(registry)
    message = 'tool "t" returned invalid output: "value" Input should be a valid string'
    assert result.to_json() == {
        "is_error": True,
        "error": {"message": message, "info": {"name": "ToolOutputError", "code": "INVALID_TOOL_OUTPUT"}},
        "content": [text(("Error: " + message)[:32])],
    }
    assert len(calls) == 1


@pytest.mark.anyio
async def test_finalize_content_returning_none_keeps_the_content() -> None:
    registry = ToolRegistry()
    calls = _finalizer_tool(registry, lambda _e, _r: None)
    result = await _execute(registry)
    assert result.to_json() == HI
    assert len(calls) == 1


@pytest.mark.anyio
async def test_a_raising_finalizer_becomes_the_error_and_is_called_once() -> None:
    def broken(_exec: ToolExecution, _result: ToolResult) -> list[ContentBlock] | None:
        raise RuntimeError("finalizer violated its total contract")

    registry = ToolRegistry()
    calls = _finalizer_tool(registry, broken)
    result = await _execute(registry)
    assert result.to_json() == error_json("finalizer violated its total contract")
    assert len(calls) == 1


@pytest.mark.anyio
async def test_a_finalizer_returning_non_lossless_content_is_replaced_without_a_second_call() -> None:
    registry = ToolRegistry()
    calls = _finalizer_tool(registry, lambda _e, _r: [{"type": "text", "text": "x", "bad": {1}}])
    result = await _execute(registry)
    assert result.to_json() == error_json("tool result must be losslessly JSON-serializable")
    assert len(calls) == 1


@pytest.mark.anyio
async def test_finalize_content_runs_for_a_call_cancelled_at_entry() -> None:
    registry = ToolRegistry()
    calls = _finalizer_tool(registry, lambda _e, _r: None)
    controller = CancelController()
    controller.cancel()
    with anyio.fail_after(5):
        result = await registry.execute(call(controller.signal))
    assert result.to_json() == ABORTED_BEFORE_DISPATCH
    assert [c.to_json() for c in calls] == [ABORTED_BEFORE_DISPATCH]


@pytest.mark.anyio
async def test_finalize_content_runs_for_a_pre_execute_raise_after_the_tool_was_unregistered() -> None:
    calls: list[ToolResult] = []

    def finalize_content(_exec: ToolExecution, result: ToolResult) -> list[ContentBlock] | None:
        calls.append(result)
        return None

    registry = ToolRegistry()
    unregister = registry.register(make_tool(finalize_content=finalize_content))

    async def gate(_exec: ToolExecution, _next: PreExecuteNext) -> PreExecuteDecision:
        unregister()
        raise CodedError("policy failed", code="POLICY_FAILED")

    registry.on_pre_execute(gate)
    result = await _execute(registry)
    assert registry.get("t") is None
    assert result.to_json() == error_json("policy failed", "CodedError", "POLICY_FAILED")
    assert [c.to_json() for c in calls] == [error_json("policy failed", "CodedError", "POLICY_FAILED")]


@pytest.mark.anyio
async def test_replacing_the_registration_during_the_call_keeps_the_original_finalizer() -> None:
    registry = ToolRegistry()
    original: list[str] = []
    replacement: list[str] = []

    async def body(_args: JsonValue, _ctx: ToolRunContext) -> JsonValue:
        unregister()
        registry.register(make_tool(finalize_content=lambda _e, _r: replacement.append("x")))
        return "hi"

    unregister = registry.register(make_tool(body=body, finalize_content=lambda _e, _r: original.append("x")))
    await _execute(registry)
    assert original == ["x"] and replacement == []


@pytest.mark.anyio
async def test_a_raising_result_observer_is_logged_and_later_observers_still_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = ToolRegistry()
    registry.register(make_tool())
    later: list[ToolResult] = []

    def broken(_exec: ToolExecution, _result: ToolResult) -> None:
        raise RuntimeError("observer broke")

    registry.on_result(broken)
    registry.on_result(lambda _e, r: later.append(r))
    with caplog.at_level(logging.WARNING, logger="host.tools._registry"):
        result = await _execute(registry)
    assert result.to_json() == HI
    assert later == [result]
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        'tool "t" (call-1): tools/result observer failed: observer broke'
    ]
