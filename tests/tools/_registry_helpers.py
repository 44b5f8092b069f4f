"""Shared builders for registry tests: the scenario tool ``t`` (returns "hi", renders it as text) and call inputs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from pydantic import TypeAdapter

from host._json import ContentBlock, JsonValue
from host.cancel import CancelController, CancelSignal
from host.tools import ToolExecutionInput, ToolRegistry, ToolResult, ToolRunContext, install_timeout_policy
from host.tools._types import (
    Accept,
    ExecuteNext,
    FinalizeContent,
    PostExecuteDecision,
    PostExecuteNext,
    PreExecuteDecision,
    PreExecuteNext,
    ToolDefinition,
    ToolDispatchExecution,
    ToolExecution,
    ToolOutput,
)

Body = Callable[[JsonValue, ToolRunContext], Awaitable[JsonValue]]


def text(value: str) -> ContentBlock:
    return {"type": "text", "text": value}


def error_json(message: str, name: str | None = None, code: str | None = None) -> dict[str, Any]:
    """The exact dict form of a failure built from an error message (and optional info)."""
    error: dict[str, Any] = {"message": message}
    if name is not None:
        error["info"] = {"name": name, "code": code}
    return {"is_error": True, "error": error, "content": [text("Error: " + message)]}


ABORTED = error_json("tool call aborted", "AbortError", "ABORTED")
ABORTED_BEFORE_DISPATCH = error_json("tool call aborted before dispatch", "AbortError", "ABORTED_BEFORE_DISPATCH")
HI = {"is_error": False, "value": "hi", "content": [text("hi")]}


def render_text(_args: JsonValue, value: str) -> list[ContentBlock]:
    return [text(value)]


STRING_OUTPUT = ToolOutput(TypeAdapter(str), render_text)


async def returns_hi(_args: JsonValue, _ctx: ToolRunContext) -> JsonValue:
    return "hi"


def make_tool(
    name: str = "t",
    body: Body = returns_hi,
    *,
    output: ToolOutput[Any] = STRING_OUTPUT,
    timeout_ms: float | None = None,
    finalize_content: FinalizeContent | None = None,
) -> ToolDefinition:
    return ToolDefinition(
        name=name,
        description=f"the {name} tool",
        parameters={"type": "object", "properties": {}},
        output=output,
        execute=body,
        timeout_ms=timeout_ms,
        finalize_content=finalize_content,
    )


def call(
    signal: CancelSignal,
    name: str = "t",
    *,
    arguments: object = None,
    agent: object | None = None,
    call_id: str = "call-1",
) -> ToolExecutionInput:
    return ToolExecutionInput(
        call_id=call_id,
        name=name,
        arguments={} if arguments is None else arguments,
        signal=signal,
        agent=agent,
    )


@dataclass
class Phases:
    """Counts every stage of a registry and keeps what the observers saw."""

    pre: int = 0
    execute: int = 0
    body: int = 0
    post: int = 0
    result: int = 0
    observed: list[tuple[ToolExecution, ToolResult]] = field(default_factory=lambda: [])
    post_signals: list[CancelSignal] = field(default_factory=lambda: [])

    def counts(self) -> dict[str, int]:
        return {"pre": self.pre, "execute": self.execute, "body": self.body, "post": self.post, "result": self.result}


def instrument(registry: ToolRegistry, phases: Phases) -> None:
    """Register counting pre/execute/post/result hooks (call before any test-specific hooks)."""

    async def pre(_exec: ToolExecution, call_next: PreExecuteNext) -> PreExecuteDecision:
        phases.pre += 1
        return await call_next()

    async def wrap(_exec: ToolDispatchExecution, call_next: ExecuteNext) -> ToolResult:
        phases.execute += 1
        return await call_next()

    async def post(exec_: ToolExecution, _result: ToolResult, call_next: PostExecuteNext) -> PostExecuteDecision:
        phases.post += 1
        phases.post_signals.append(exec_.signal)
        return await call_next()

    def observe(exec_: ToolExecution, result: ToolResult) -> None:
        phases.result += 1
        phases.observed.append((exec_, result))

    registry.on_pre_execute(pre)
    registry.on_execute(wrap)
    registry.on_post_execute(post)
    registry.on_result(observe)


def counted_body(phases: Phases, body: Body = returns_hi) -> Body:
    async def run(args: JsonValue, ctx: ToolRunContext) -> JsonValue:
        phases.body += 1
        return await body(args, ctx)

    return run


def new_controller() -> CancelController:
    return CancelController()


def instrumented_registry(
    body: Body = returns_hi, *, timeout_ms: float | None = None, timeout_policy: bool = False
) -> tuple[ToolRegistry, Phases]:
    """A registry holding ``t`` with a counted ``body`` and the counting hooks (the timeout policy first if asked)."""
    registry = ToolRegistry()
    if timeout_policy:
        install_timeout_policy(registry)
    phases = Phases()
    registry.register(make_tool(body=counted_body(phases, body), timeout_ms=timeout_ms))
    instrument(registry, phases)
    return registry, phases


async def run_cancelling(
    registry: ToolRegistry,
    controller: CancelController,
    reached: anyio.Event,
    release: anyio.Event | None = None,
    *,
    agent: object | None = None,
) -> ToolResult:
    """Execute ``t``; once ``reached`` is set, cancel the caller, then set ``release``."""
    results: list[ToolResult] = []

    async def run() -> None:
        results.append(await registry.execute(call(controller.signal, agent=agent)))

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await reached.wait()
            controller.cancel("user")
            if release is not None:
                release.set()
    return results[0]


__all__ = [
    "ABORTED",
    "ABORTED_BEFORE_DISPATCH",
    "HI",
    "STRING_OUTPUT",
    "Accept",
    "Phases",
    "call",
    "counted_body",
    "error_json",
    "instrument",
    "instrumented_registry",
    "make_tool",
    "new_controller",
    "returns_hi",
    "run_cancelling",
    "text",
]
