"""Registration and basic execution (docs/behaviour.md#registry-registration, #registry-codes-and-texts,
#registry-failures-from-exceptions; scenarios 1–13)."""

from __future__ import annotations

import math
from typing import Any, cast

import anyio
import pytest
from pydantic import BaseModel, TypeAdapter

from host._exceptions import CodedError
from host._json import ContentBlock, JsonValue
from host.cancel import CancelController
from host.tools import ToolFailure, ToolRegistry, ToolResult, ToolRunContext, ToolSuccess
from host.tools._define import define_tool
from host.tools._results import tool_failure_from_exception
from host.tools._types import ToolDefinition, ToolExecution, ToolOutput
from tests.tools._registry_helpers import HI, STRING_OUTPUT, Phases, call, error_json, instrument, make_tool, text

TIMEOUT_RANGE = "timeout_ms must be a positive finite number no greater than 2147483647"


def test_schemas_project_only_name_description_and_parameters() -> None:
    registry = ToolRegistry()
    registry.register(make_tool(timeout_ms=100, finalize_content=lambda _e, _r: None))
    assert registry.schemas() == [
        {"name": "t", "description": "the t tool", "parameters": {"type": "object", "properties": {}}}
    ]


def test_registering_without_output_is_rejected_with_the_exact_message() -> None:
    registry = ToolRegistry()
    definition = ToolDefinition(
        name="t",
        description="d",
        parameters={},
        output=cast("ToolOutput[Any]", None),
        execute=make_tool().execute,
    )
    with pytest.raises(ValueError) as caught:
        registry.register(definition)
    assert str(caught.value) == 'tool "t" must declare output { schema, render }'


@pytest.mark.parametrize("timeout_ms", [0, -1, math.inf, math.nan, 2147483648])
def test_out_of_range_timeouts_are_rejected_at_registration_and_by_define_tool(timeout_ms: float) -> None:
    registry = ToolRegistry()
    with pytest.raises(ValueError) as caught:
        registry.register(make_tool(timeout_ms=timeout_ms))
    assert str(caught.value) == f'tool "t" {TIMEOUT_RANGE}'

    async def body(_args: BaseModel, _ctx: ToolRunContext) -> JsonValue:
        return "hi"

    with pytest.raises(ValueError) as caught_define:
        define_tool("t", "d", BaseModel, STRING_OUTPUT, body, timeout_ms=timeout_ms)
    assert str(caught_define.value) == f"define_tool(t): {TIMEOUT_RANGE}"


def test_the_largest_timer_delay_is_accepted() -> None:
    registry = ToolRegistry()
    registry.register(make_tool(timeout_ms=2147483647))
    definition = registry.get("t")
    assert definition is not None and definition.timeout_ms == 2147483647


def test_duplicate_names_are_rejected_and_unregister_is_idempotent() -> None:
    registry = ToolRegistry()
    unregister = registry.register(make_tool())
    with pytest.raises(ValueError) as caught:
        registry.register(make_tool())
    assert str(caught.value) == 'tool "t" is already registered'
    unregister()
    unregister()
    assert registry.get("t") is None
    replacement = make_tool()
    registry.register(replacement)
    unregister()  # a stale unregister never removes a newer registration
    assert registry.get("t") is replacement


@pytest.mark.anyio
async def test_success_returns_the_exact_result_and_the_observer_gets_the_same_object() -> None:
    registry = ToolRegistry()
    registry.register(make_tool())
    phases = Phases()
    instrument(registry, phases)
    with anyio.fail_after(5):
        result = await registry.execute(call(CancelController().signal))
    assert result.to_json() == HI
    assert isinstance(result, ToolSuccess)
    assert phases.observed[0][1] is result


@pytest.mark.anyio
async def test_unknown_tool_fails_with_unknown_tool_and_still_runs_pre_and_post_execute() -> None:
    registry = ToolRegistry()
    phases = Phases()
    instrument(registry, phases)
    with anyio.fail_after(5):
        result = await registry.execute(call(CancelController().signal, "nope"))
    assert result.to_json() == error_json('unknown tool "nope"', "ToolNotFoundError", "UNKNOWN_TOOL")
    assert phases.pre == 1 and phases.post == 1 and phases.result == 1


class _ReadParams(BaseModel):
    path: str


@pytest.mark.anyio
async def test_define_tool_reports_a_missing_required_property() -> None:
    seen: list[str] = []

    async def read(params: _ReadParams, _ctx: ToolRunContext) -> JsonValue:
        seen.append(params.path)
        return params.path

    registry = ToolRegistry()
    registry.register(define_tool("read", "read a file", _ReadParams, STRING_OUTPUT, read))
    with anyio.fail_after(5):
        missing = await registry.execute(call(CancelController().signal, "read", arguments={}))
        wrong = await registry.execute(call(CancelController().signal, "read", arguments={"path": 3}))
        good = await registry.execute(call(CancelController().signal, "read", arguments={"path": "/a"}))
    assert missing.to_json() == error_json(
        'invalid arguments: missing required property "path"', "ToolArgsError", "INVALID_ARGS"
    )
    assert wrong.to_json() == error_json(
        'invalid arguments: "path" Input should be a valid string', "ToolArgsError", "INVALID_ARGS"
    )
    assert good.to_json() == {"is_error": False, "value": "/a", "content": [text("/a")]}
    assert seen == ["/a"]
    assert registry.schemas()[0]["parameters"] == _ReadParams.model_json_schema()


async def _run_body(body_error: Exception) -> ToolResult:
    async def body(_args: JsonValue, _ctx: ToolRunContext) -> JsonValue:
        raise body_error

    registry = ToolRegistry()
    registry.register(make_tool(body=body))
    with anyio.fail_after(5):
        return await registry.execute(call(CancelController().signal))


@pytest.mark.anyio
async def test_a_coded_error_gets_info_and_a_plain_error_gets_none() -> None:
    coded = await _run_body(CodedError("kaboom", code="BOOM"))
    assert coded.to_json() == error_json("kaboom", "CodedError", "BOOM")
    plain = await _run_body(RuntimeError("kaboom"))
    assert isinstance(plain, ToolFailure)
    assert plain.error.to_json() == {"message": "kaboom"}
    assert plain.content == [text("Error: kaboom")]


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise ValueError("no text for you")


@pytest.mark.anyio
async def test_unprintable_and_empty_exceptions_get_fallback_texts() -> None:
    unprintable = await _run_body(_Unprintable())
    assert unprintable.content == [text("Error: <unprintable thrown value>")]
    empty = await _run_body(RuntimeError())
    assert empty.to_json() == error_json("RuntimeError")


def test_tool_failure_from_exception_follows_the_exception_rules() -> None:
    assert tool_failure_from_exception(CodedError("x", code="C")).to_json() == error_json("x", "CodedError", "C")
    assert tool_failure_from_exception(KeyError()).to_json() == error_json("KeyError")


@pytest.mark.anyio
async def test_a_body_must_return_lossless_json_that_matches_the_schema() -> None:
    async def nan_body(_args: JsonValue, _ctx: ToolRunContext) -> JsonValue:
        return math.nan

    async def int_body(_args: JsonValue, _ctx: ToolRunContext) -> JsonValue:
        return 1

    registry = ToolRegistry()
    registry.register(make_tool("nan", nan_body))
    registry.register(make_tool("int", int_body))
    with anyio.fail_after(5):
        nan_result = await registry.execute(call(CancelController().signal, "nan"))
        int_result = await registry.execute(call(CancelController().signal, "int"))
    assert nan_result.to_json() == error_json(
        'tool "nan" returned invalid output: value is not lossless JSON', "ToolOutputError", "INVALID_TOOL_OUTPUT"
    )
    assert int_result.to_json() == error_json(
        'tool "int" returned invalid output: "value" Input should be a valid string',
        "ToolOutputError",
        "INVALID_TOOL_OUTPUT",
    )


@pytest.mark.anyio
async def test_nested_schema_violations_name_their_path() -> None:
    async def body(_args: JsonValue, _ctx: ToolRunContext) -> JsonValue:
        return {"items": [1, "two"]}

    output = ToolOutput(TypeAdapter(dict[str, list[int]]), lambda _a, _v: [text("ok")])
    registry = ToolRegistry()
    registry.register(make_tool(body=body, output=output))
    with anyio.fail_after(5):
        result = await registry.execute(call(CancelController().signal))
    assert isinstance(result, ToolFailure)
    assert result.error.message == (
        'tool "t" returned invalid output: "value.items.1" Input should be a valid integer, '
        "unable to parse string as an integer"
    )


@pytest.mark.anyio
async def test_render_failures_and_non_lossless_render_output_are_invalid_output_without_value() -> None:
    def broken_render(_args: JsonValue, _value: str) -> list[ContentBlock]:
        raise RuntimeError("bad render")

    def set_render(_args: JsonValue, _value: str) -> list[ContentBlock]:
        return [{"type": "text", "text": "x", "extra": {1, 2}}]

    registry = ToolRegistry()
    registry.register(make_tool("broken", output=ToolOutput(TypeAdapter(str), broken_render)))
    registry.register(make_tool("setty", output=ToolOutput(TypeAdapter(str), set_render)))
    with anyio.fail_after(5):
        broken = await registry.execute(call(CancelController().signal, "broken"))
        setty = await registry.execute(call(CancelController().signal, "setty"))
    assert broken.to_json() == error_json(
        'tool "broken" returned invalid output: output.render failed: bad render',
        "ToolOutputError",
        "INVALID_TOOL_OUTPUT",
    )
    assert setty.to_json() == error_json(
        'tool "setty" returned invalid output: output.render returned non-lossless JSON',
        "ToolOutputError",
        "INVALID_TOOL_OUTPUT",
    )
    assert "value" not in broken.to_json() and "value" not in setty.to_json()


@pytest.mark.anyio
async def test_non_lossless_arguments_fail_before_pre_execute_with_one_observer_call() -> None:
    registry = ToolRegistry()
    registry.register(make_tool())
    phases = Phases()
    instrument(registry, phases)
    with anyio.fail_after(5):
        result = await registry.execute(call(CancelController().signal, arguments={"x": math.nan}))
    assert result.to_json() == {
        "is_error": True,
        "error": {"message": "tool execution arguments must be losslessly JSON-serializable"},
        "content": [text("Error: tool execution arguments must be losslessly JSON-serializable")],
    }
    assert phases.counts() == {"pre": 0, "execute": 0, "body": 0, "post": 0, "result": 1}


@pytest.mark.anyio
async def test_arguments_are_detached_from_the_caller() -> None:
    release = anyio.Event()
    body_saw: list[JsonValue] = []
    pre_saw: list[ToolExecution] = []

    async def body(args: JsonValue, _ctx: ToolRunContext) -> JsonValue:
        await release.wait()
        body_saw.append(args)
        return "hi"

    registry = ToolRegistry()
    registry.register(make_tool(body=body))
    registry.on_result(lambda exec_, _r: pre_saw.append(exec_))
    arguments: dict[str, Any] = {"items": [1]}
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(registry.execute, call(CancelController().signal, arguments=arguments))
            await anyio.wait_all_tasks_blocked()
            arguments["items"].append(2)
            arguments["new"] = True
            release.set()
    assert body_saw == [{"items": [1]}]
    assert pre_saw[0].arguments == {"items": [1]}
