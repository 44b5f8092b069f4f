"""The registry's tools as MCP tools, and a registry result as a ``CallToolResult``.

Inputs are the registry's JSON schemas as they are. The delegation tools declare ``DELEGATION_OUTPUT_SCHEMA``,
which a foreground result (``{run_id, provider, stop_reason, diagnostic?}``) and a background start
(``{provider, job_id}``) both satisfy: the official client rejects a non-error result of a tool with an output
schema unless its ``structuredContent`` validates.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

import mcp_types as types

from host._json import ContentBlock
from host.diagnostics import SubagentResult
from host.tools import JOB_LIST_TOOL_NAME, JOB_OUTPUT_TOOL_NAME, ToolResult, ToolSuccess

__all__ = ["DELEGATION_OUTPUT_SCHEMA", "call_tool_result", "mcp_tools", "structured_content"]

DELEGATION_OUTPUT_SCHEMA: Final[Mapping[str, Any]] = {
    "type": "object",
    "properties": {
        "run_id": {"type": "string", "description": "The settled run's id (foreground calls)."},
        "provider": {"type": "string", "description": "The provider entry the call delegated to."},
        "stop_reason": {"type": "string", "description": "How the run stopped (foreground calls)."},
        "diagnostic": {"type": "string", "description": "The run's safe diagnostic, when it has one."},
        "job_id": {"type": "string", "description": "The background job's id (background starts)."},
    },
    "required": ["provider"],
    "additionalProperties": False,
}
"""The ``outputSchema`` of every delegation tool."""

_READ_ONLY_TOOLS: Final = frozenset({JOB_OUTPUT_TOOL_NAME, JOB_LIST_TOOL_NAME})


def mcp_tools(schemas: list[dict[str, Any]], delegation_tools: Mapping[str, str]) -> list[types.Tool]:
    """The MCP tool list of ``schemas`` (``Host.tools()``); ``delegation_tools`` maps tool name → provider."""
    tools: list[types.Tool] = []
    for schema in schemas:
        name = schema["name"]
        if name in delegation_tools:
            annotations = types.ToolAnnotations(read_only_hint=False, open_world_hint=True)
            output_schema: dict[str, Any] | None = json.loads(json.dumps(DELEGATION_OUTPUT_SCHEMA))
        else:
            annotations = types.ToolAnnotations(read_only_hint=name in _READ_ONLY_TOOLS)
            output_schema = None
        tools.append(
            types.Tool(
                name=name,
                description=schema["description"],
                input_schema=schema["parameters"],
                output_schema=output_schema,
                annotations=annotations,
            )
        )
    return tools


def structured_content(provider: str, result: ToolResult, settled: tuple[str, SubagentResult] | None) -> dict[str, Any]:
    """A delegation call's ``structuredContent``: the settled run's facts, or the started job's id."""
    content: dict[str, Any] = {"provider": provider}
    if settled is not None:
        run_id, run_result = settled
        content["run_id"] = run_id
        content["stop_reason"] = run_result.stop_reason
        if run_result.diagnostic:
            content["diagnostic"] = run_result.diagnostic
    elif isinstance(result, ToolSuccess) and isinstance(result.value, dict):
        job_id = result.value.get("job_id")
        if isinstance(job_id, str):
            content["job_id"] = job_id
    return content


def call_tool_result(result: ToolResult, structured: dict[str, Any] | None) -> types.CallToolResult:
    """The registry's exact content and ``isError``, plus ``structuredContent`` when given."""
    blocks = [types.TextContent(text=_text_of(block)) for block in result.content]
    return types.CallToolResult(
        content=list[types.ContentBlock](blocks), structured_content=structured, is_error=result.is_error
    )


def _text_of(block: ContentBlock) -> str:
    if block.get("type") == "text" and isinstance(block.get("text"), str):
        return str(block["text"])
    # The host's tools return text only; any other block is shown as its JSON.
    return json.dumps(block, ensure_ascii=False)
