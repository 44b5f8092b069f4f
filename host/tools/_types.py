"""The registry's types, shaped so pyright enforces stage-based mutability (docs/behaviour.md#registry-types).

The caller supplies a frozen ``ToolExecutionInput`` with a required signal. Pre-/post-execute, observers and
``finalize_content`` borrow the frozen ``ToolExecution``; the body gets a frozen ``ToolRunContext``. Only
``tools/execute`` wrappers see ``ToolDispatchExecution``, whose ``signal`` alone is assignable (never to ``None``).
"""

from __future__ import annotations

import copy
import enum
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeAlias, TypeVar

from pydantic import TypeAdapter

from host._json import ContentBlock, JsonValue
from host.cancel import MAX_TIMER_DELAY_MS, CancelSignal

__all__ = [
    "Accept",
    "Allow",
    "ApprovalOutcome",
    "ApprovalRequest",
    "ApprovalService",
    "Ask",
    "Block",
    "Deny",
    "ExecuteNext",
    "ExecuteWrapper",
    "FinalizeContent",
    "PostExecuteDecision",
    "PostExecuteListener",
    "PostExecuteNext",
    "PreExecuteDecision",
    "PreExecuteListener",
    "PreExecuteNext",
    "ResultObserver",
    "ToolBody",
    "ToolDefinition",
    "ToolDispatchExecution",
    "ToolError",
    "ToolErrorInfo",
    "ToolExecution",
    "ToolExecutionInput",
    "ToolFailure",
    "ToolOutput",
    "ToolResult",
    "ToolRunContext",
    "ToolSuccess",
]

V = TypeVar("V")


# --- executions -------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolExecutionInput:
    """One tool call as the caller supplies it; ``signal`` is required and owned by the caller."""

    call_id: str
    name: str
    arguments: object
    """Parsed JSON; the registry snapshots it once (docs/behaviour.md#registry-lossless-json)."""
    signal: CancelSignal
    agent: object | None = None
    """An opaque owner token, used only to route approval requests."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolExecution:
    """The read-only view seen by pre-/post-execute, result observers and ``finalize_content``."""

    call_id: str
    name: str
    arguments: JsonValue
    """The detached lossless snapshot (``None`` when the arguments were not lossless)."""
    signal: CancelSignal
    """Always the caller's signal."""
    agent: object | None
    token: object
    """Unique per call, minted by the registry."""


class ToolDispatchExecution:
    """The live view seen by ``tools/execute`` wrappers: only ``signal`` is assignable."""

    __slots__ = ("_execution", "_signal")

    def __init__(self, execution: ToolExecution) -> None:
        self._execution = execution
        self._signal = execution.signal

    @property
    def call_id(self) -> str:
        """The call's id."""
        return self._execution.call_id

    @property
    def name(self) -> str:
        """The tool name the caller asked for."""
        return self._execution.name

    @property
    def arguments(self) -> JsonValue:
        """The detached lossless snapshot of the arguments."""
        return self._execution.arguments

    @property
    def agent(self) -> object | None:
        """The opaque owner token."""
        return self._execution.agent

    @property
    def token(self) -> object:
        """The registry-minted call token."""
        return self._execution.token

    @property
    def signal(self) -> CancelSignal:
        """The signal dispatch will fuse with the caller's; assign to pass a derived one, restore it after."""
        return self._signal

    @signal.setter
    def signal(self, signal: CancelSignal) -> None:
        self._signal = signal

    def __repr__(self) -> str:
        return f"<ToolDispatchExecution name={self.name!r} call_id={self.call_id!r}>"


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRunContext:
    """What the tool body sees; ``signal`` is the caller's signal fused with any wrapper's."""

    call_id: str
    name: str
    arguments: JsonValue
    agent: object | None
    signal: CancelSignal


# --- results ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolErrorInfo:
    """The structured part of a failure built from a ``CodedError``."""

    name: str
    code: str


@dataclass(frozen=True, slots=True)
class ToolError:
    """A failure's error: ``message`` always, ``info`` only for structured failures."""

    message: str
    info: ToolErrorInfo | None = None

    def to_json(self) -> dict[str, Any]:
        """Return ``{message, info?}``."""
        data: dict[str, Any] = {"message": self.message}
        if self.info is not None:
            data["info"] = {"name": self.info.name, "code": self.info.code}
        return data


@dataclass(frozen=True, slots=True)
class ToolSuccess:
    """A successful call: the JSON ``value`` and its model-visible ``content``."""

    value: JsonValue
    content: list[ContentBlock]
    is_error: Literal[False] = field(default=False, init=False)

    def to_json(self) -> dict[str, Any]:
        """Return ``{is_error: False, value, content}`` as fresh JSON."""
        return {"is_error": False, "value": copy.deepcopy(self.value), "content": copy.deepcopy(self.content)}


@dataclass(frozen=True, slots=True)
class ToolFailure:
    """A failed call: never a ``value``; ``content`` is what the model sees."""

    error: ToolError
    content: list[ContentBlock]
    is_error: Literal[True] = field(default=True, init=False)

    def to_json(self) -> dict[str, Any]:
        """Return ``{is_error: True, error: {message, info?}, content}`` as fresh JSON."""
        return {"is_error": True, "error": self.error.to_json(), "content": copy.deepcopy(self.content)}


ToolResult: TypeAlias = ToolSuccess | ToolFailure
"""The one result of a tool call, discriminated by ``is_error``."""


# --- definitions ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolOutput(Generic[V]):
    """A tool's output contract: ``schema`` validates the value; ``render(args, value)`` gives the content."""

    schema: TypeAdapter[V]
    render: Callable[[JsonValue, V], Sequence[ContentBlock]]
    """Called with the argument snapshot and the schema-validated value."""


ToolBody: TypeAlias = Callable[[JsonValue, ToolRunContext], Awaitable[JsonValue]]
FinalizeContent: TypeAlias = Callable[[ToolExecution, ToolResult], Sequence[ContentBlock] | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolDefinition:
    """A registered tool. ``schemas()`` shows the model only ``name``, ``description`` and ``parameters``."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    """The JSON Schema of the arguments."""
    output: ToolOutput[Any]
    execute: ToolBody
    finalize_content: FinalizeContent | None = None
    """Content-only rewrite run exactly once per call in ``finish``; captured when the call starts."""
    timeout_ms: float | None = None
    """The budget the timeout policy enforces (cooperatively, through ``ctx.signal``)."""


def valid_timeout_ms(timeout_ms: object) -> bool:
    """Whether ``timeout_ms`` is ``None`` or a positive finite number no greater than ``MAX_TIMER_DELAY_MS``."""
    if timeout_ms is None:
        return True
    if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int | float):
        return False
    return math.isfinite(timeout_ms) and 0 < timeout_ms <= MAX_TIMER_DELAY_MS


# --- decisions --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Allow:
    """Pre-execute: let the call proceed."""


@dataclass(frozen=True, slots=True)
class Deny:
    """Pre-execute: fail the call with ``reason`` (beats cancellation)."""

    reason: str


@dataclass(frozen=True, slots=True)
class Ask:
    """Pre-execute: resolve through the approval seam."""

    reason: str | None = None


class _Unset(enum.Enum):
    UNSET = "unset"


@dataclass(frozen=True, slots=True)
class Accept:
    """Post-execute: keep the result, or replace its ``content`` *or* (on a success) its ``value``."""

    content: Sequence[ContentBlock] | None = None
    value: JsonValue | Literal[_Unset.UNSET] = _Unset.UNSET

    @property
    def replaces_value(self) -> bool:
        """Whether a replacement ``value`` was given (``None`` is a valid JSON value)."""
        return self.value is not _Unset.UNSET


@dataclass(frozen=True, slots=True)
class Block:
    """Post-execute: replace the result with a failure whose content is ``feedback``."""

    feedback: Sequence[ContentBlock]


PreExecuteDecision: TypeAlias = Allow | Deny | Ask
PostExecuteDecision: TypeAlias = Accept | Block

PreExecuteNext: TypeAlias = Callable[[], Awaitable[PreExecuteDecision]]
PreExecuteListener: TypeAlias = Callable[[ToolExecution, PreExecuteNext], Awaitable[PreExecuteDecision]]
ExecuteNext: TypeAlias = Callable[[], Awaitable[ToolResult]]
ExecuteWrapper: TypeAlias = Callable[[ToolDispatchExecution, ExecuteNext], Awaitable[ToolResult]]
PostExecuteNext: TypeAlias = Callable[[], Awaitable[PostExecuteDecision]]
PostExecuteListener: TypeAlias = Callable[[ToolExecution, ToolResult, PostExecuteNext], Awaitable[PostExecuteDecision]]
ResultObserver: TypeAlias = Callable[[ToolExecution, ToolResult], None]


# --- approval ---------------------------------------------------------------------------------------------------

ApprovalOutcome: TypeAlias = Literal["allowed-once", "rejected", "cancelled", "unavailable"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalRequest:
    """What the registry asks the approval seam; ``signal`` is the caller's signal."""

    agent: object
    tool_name: str
    call_id: str
    reason: str | None
    signal: CancelSignal


class ApprovalService(Protocol):
    """The optional approval seam behind ``Ask``."""

    async def request(self, request: ApprovalRequest, /) -> ApprovalOutcome:
        """Ask for approval; should observe ``request.signal`` while waiting."""
        ...
