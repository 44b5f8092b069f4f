"""Result builders: the exact texts of docs/behaviour.md#registry-codes-and-texts and the exception rules of
docs/behaviour.md#registry-failures-from-exceptions.

Every failure's model-visible content is ``[{"type": "text", "text": "Error: " + message}]``. A success is built
only through ``build_success``, which snapshots, validates and renders the value against a definition.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final, cast

from pydantic import ValidationError

from host._exceptions import CodedError, ToolNotFoundError, ToolOutputError
from host._json import ContentBlock, JsonValue, format_ms
from host.tools._snapshot import NOT_LOSSLESS, snapshot_json
from host.tools._types import ToolDefinition, ToolError, ToolErrorInfo, ToolFailure, ToolResult, ToolSuccess

__all__ = [
    "TOOL_ABORTED",
    "TOOL_ABORTED_BEFORE_DISPATCH",
    "TOOL_TIMEOUT",
    "aborted_before_dispatch_result",
    "aborted_result",
    "build_success",
    "exception_text",
    "failure_result",
    "tool_failure_from_exception",
    "tool_timeout_result",
]

TOOL_ABORTED: Final = "ABORTED"
"""The body was invoked (and may have had side effects) before the call was cancelled."""
TOOL_ABORTED_BEFORE_DISPATCH: Final = "ABORTED_BEFORE_DISPATCH"
"""The call was cancelled before the body was invoked."""
TOOL_TIMEOUT: Final = "TOOL_TIMEOUT"
"""The timeout policy's own deadline fired."""

UNPRINTABLE_TEXT: Final = "<unprintable thrown value>"
_ABORT_ERROR_NAME: Final = "AbortError"
_ABORTED_MESSAGE: Final = "tool call aborted"
_ABORTED_BEFORE_DISPATCH_MESSAGE: Final = "tool call aborted before dispatch"


def exception_text(error: BaseException) -> str:
    """``str(error)``; the class name when that is empty; ``<unprintable thrown value>`` when ``str()`` raises."""
    try:
        text = str(error)
    except Exception:
        return UNPRINTABLE_TEXT
    return text if text else type(error).__name__


def failure_result(message: str, info: ToolErrorInfo | None = None) -> ToolFailure:
    """A failure whose content is the single text block ``Error: <message>``."""
    return ToolFailure(ToolError(message, info), [{"type": "text", "text": "Error: " + message}])


def tool_failure_from_exception(error: Exception) -> ToolFailure:
    """Build a failure from ``error`` (docs/behaviour.md#registry-failures-from-exceptions): a ``CodedError`` gets
    ``info {name, code}``, anything else none."""
    info: ToolErrorInfo | None = None
    if isinstance(error, CodedError):
        code: object = getattr(error, "code", None)
        if isinstance(code, str):
            info = ToolErrorInfo(type(error).__name__, code)
    return failure_result(exception_text(error), info)


def aborted_result() -> ToolFailure:
    """``ABORTED``: the body ran, then the call was cancelled."""
    return failure_result(_ABORTED_MESSAGE, ToolErrorInfo(_ABORT_ERROR_NAME, TOOL_ABORTED))


def aborted_before_dispatch_result() -> ToolFailure:
    """``ABORTED_BEFORE_DISPATCH``: the body was never invoked."""
    return failure_result(
        _ABORTED_BEFORE_DISPATCH_MESSAGE, ToolErrorInfo(_ABORT_ERROR_NAME, TOOL_ABORTED_BEFORE_DISPATCH)
    )


def tool_timeout_result(timeout_ms: float) -> ToolFailure:
    """The exact ``TOOL_TIMEOUT`` failure for a budget of ``timeout_ms``."""
    return failure_result(
        f"tool call timed out after {format_ms(timeout_ms)}ms", ToolErrorInfo("ToolTimeoutError", TOOL_TIMEOUT)
    )


def build_success(name: str, definition: ToolDefinition | None, arguments: JsonValue, value: object) -> ToolResult:
    """Snapshot, validate and render ``value`` through ``definition``.

    Returns ``UNKNOWN_TOOL`` when the definition is gone, ``INVALID_TOOL_OUTPUT`` on any violation.
    """
    if definition is None:
        return tool_failure_from_exception(ToolNotFoundError(f'unknown tool "{name}"'))
    try:
        snapshot = snapshot_json(value)
    except Exception as exc:
        return _invalid_output(name, f"value snapshot failed: {exception_text(exc)}")
    if snapshot is NOT_LOSSLESS:
        return _invalid_output(name, "value is not lossless JSON")
    output = definition.output
    try:
        validated = output.schema.validate_python(snapshot)
    except ValidationError as exc:
        return _invalid_output(name, "; ".join(_value_violations(exc)))
    try:
        rendered = output.render(arguments, validated)
    except Exception as exc:
        return _invalid_output(name, f"output.render failed: {exception_text(exc)}")
    try:
        content = snapshot_json(rendered)
    except Exception as exc:
        return _invalid_output(name, f"output.render failed: {exception_text(exc)}")
    if content is NOT_LOSSLESS or not isinstance(content, list):
        return _invalid_output(name, "output.render returned non-lossless JSON")
    return ToolSuccess(snapshot, cast("list[ContentBlock]", content))


def _invalid_output(name: str, violation: str) -> ToolFailure:
    return tool_failure_from_exception(ToolOutputError(f'tool "{name}" returned invalid output: {violation}'))


def _value_violations(error: ValidationError) -> Sequence[str]:
    violations: list[str] = []
    for detail in error.errors(include_url=False):
        path = ".".join(["value", *(str(part) for part in detail["loc"])])
        violations.append(f'"{path}" {detail["msg"]}')
    return violations


RESULT_NOT_LOSSLESS_MESSAGE: Final = "tool result must be losslessly JSON-serializable"
BLOCKED_MESSAGE: Final = "tool result blocked by post-execute policy"


def materialize(candidate: ToolResult) -> ToolResult:
    """A detached lossless copy of ``candidate``, or the ``tool result must be ...`` error."""
    try:
        content = snapshot_json(candidate.content)
        if isinstance(candidate, ToolSuccess):
            value = snapshot_json(candidate.value)
            if content is NOT_LOSSLESS or value is NOT_LOSSLESS or not isinstance(content, list):
                return failure_result(RESULT_NOT_LOSSLESS_MESSAGE)
            return ToolSuccess(value, cast("list[ContentBlock]", content))
        error = snapshot_json(candidate.error.to_json())
    except Exception as exc:
        return tool_failure_from_exception(exc)
    if content is NOT_LOSSLESS or error is NOT_LOSSLESS or not isinstance(content, list):
        return failure_result(RESULT_NOT_LOSSLESS_MESSAGE)
    message = cast("object", candidate.error.message)
    if not isinstance(message, str):
        return failure_result(RESULT_NOT_LOSSLESS_MESSAGE)
    return ToolFailure(ToolError(message, candidate.error.info), cast("list[ContentBlock]", content))


def block_message(feedback: Sequence[ContentBlock]) -> str:
    parts: list[str] = []
    for item in feedback:
        block = cast("object", item)
        kind: object = cast("dict[str, object]", block).get("type") if isinstance(block, dict) else None
        text: object = cast("dict[str, object]", block).get("text") if kind == "text" else None
        parts.append(text if isinstance(text, str) else f"[{kind} content]")
    return "\n".join(parts) or BLOCKED_MESSAGE


def json_text(value: object) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
