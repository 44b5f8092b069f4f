"""``define_tool``: a tool definition from a pydantic parameters model (docs/behaviour.md#registry-types,
#registry-codes-and-texts).

The arguments are validated *inside* the body, so an argument failure counts as an invoked body; it raises
``ToolArgsError("invalid arguments: ...")`` with ``missing required property "<field>"`` for missing fields.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from host._exceptions import ToolArgsError
from host._json import JsonValue
from host.cancel import MAX_TIMER_DELAY_MS
from host.tools._types import FinalizeContent, ToolDefinition, ToolOutput, ToolRunContext, valid_timeout_ms

__all__ = ["define_tool"]

P = TypeVar("P", bound=BaseModel)


def define_tool(
    name: str,
    description: str,
    params: type[P],
    output: ToolOutput[Any],
    execute: Callable[[P, ToolRunContext], Awaitable[JsonValue]],
    *,
    finalize_content: FinalizeContent | None = None,
    timeout_ms: float | None = None,
) -> ToolDefinition:
    """Build a definition whose ``parameters`` is ``params``' JSON Schema and whose body validates the arguments.

    Raises:
        ValueError: ``timeout_ms`` is not a positive finite number no greater than 2147483647.
    """
    if not valid_timeout_ms(timeout_ms):
        raise ValueError(
            f"define_tool({name}): timeout_ms must be a positive finite number no greater than {MAX_TIMER_DELAY_MS}"
        )

    async def body(arguments: JsonValue, context: ToolRunContext) -> JsonValue:
        try:
            parsed = params.model_validate(arguments)
        except ValidationError as exc:
            raise ToolArgsError("invalid arguments: " + "; ".join(_argument_violations(exc))) from exc
        return await execute(parsed, context)

    return ToolDefinition(
        name=name,
        description=description,
        parameters=_JsonSchemaOf(params),
        output=output,
        execute=body,
        finalize_content=finalize_content,
        timeout_ms=timeout_ms,
    )


class _JsonSchemaOf(Mapping[str, Any]):
    """A model's JSON Schema, generated on first read: a command-line run never reads its tools' schemas."""

    __slots__ = ("_params", "_schema")

    def __init__(self, params: type[BaseModel]) -> None:
        self._params = params
        self._schema: dict[str, Any] | None = None

    def _generated(self) -> dict[str, Any]:
        if self._schema is None:
            self._schema = self._params.model_json_schema()
        return self._schema

    def __getitem__(self, key: str) -> Any:
        return self._generated()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._generated())

    def __len__(self) -> int:
        return len(self._generated())

    def __repr__(self) -> str:
        return repr(self._generated())


def _argument_violations(error: ValidationError) -> list[str]:
    violations: list[str] = []
    for detail in error.errors(include_url=False):
        # An empty location means the arguments as a whole (not an object, say).
        path = ".".join(str(part) for part in detail["loc"]) or "arguments"
        if detail["type"] == "missing":
            violations.append(f'missing required property "{path}"')
        else:
            violations.append(f'"{path}" {detail["msg"]}')
    return violations
