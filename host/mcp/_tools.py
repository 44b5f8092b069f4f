"""The registry's tools as MCP tools, and a registry result as a ``tools/call`` result.

Inputs are the registry's JSON schemas as they are. A delegation tool's ``structuredContent`` carries the exact
model-visible text beside the run's facts: ``output`` for a success (the answer, or the background-start line) and
``error`` for an ``isError`` result (the failure text with its partial output, a timeout, bad arguments). Claude
Code and Codex show the model only ``structuredContent`` when a result has one, so the text must be in it; the text
content block stays the same readable text for clients that read ``content``. The job tools (``job_output``,
``job_list``, ``job_kill``) return text only and no ``structuredContent``, so every client shows their text.
Rule (tested over every tool and result shape): a result with ``structuredContent`` carries every text of its
``content`` there too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from host._json import ContentBlock
from host.diagnostics import SubagentResult
from host.stream import RunUsage
from host.tools import (
    CHANGES_APPLY_TOOL_NAME,
    JOB_LIST_TOOL_NAME,
    JOB_OUTPUT_TOOL_NAME,
    SESSION_LIST_TOOL_NAME,
    ToolResult,
    ToolSuccess,
)

__all__ = ["DELEGATION_OUTPUT_SCHEMA", "call_tool_result", "mcp_tools", "structured_content"]

DELEGATION_OUTPUT_SCHEMA: Final[Mapping[str, Any]] = {
    "type": "object",
    "properties": {
        "output": {
            "type": "string",
            "description": "What the call returned: the subagent's answer, or the background-start line.",
        },
        "error": {
            "type": "string",
            "description": "Why the call failed (isError results), with any partial output.",
        },
        "run_id": {"type": "string", "description": "The settled run's id (foreground calls)."},
        "provider": {"type": "string", "description": "The provider entry the call delegated to."},
        "stop_reason": {"type": "string", "description": "How the run stopped (foreground calls)."},
        "diagnostic": {"type": "string", "description": "The run's safe diagnostic, when it has one."},
        "job_id": {"type": "string", "description": "The background job's id (background starts)."},
        "changes": {
            "type": "object",
            "description": "A worktree run's changes: {branch, base, files: [{path, status, insertions, deletions}], "
            "insertions, deletions}; apply them with changes_apply.",
        },
        "usage": {
            "type": "object",
            "description": "The run's usage totals, when the child reported usage (checked numbers only).",
            "properties": {
                "input_tokens": {"type": "integer", "minimum": 0},
                "output_tokens": {"type": "integer", "minimum": 0},
                "context_tokens": {"type": "integer", "minimum": 0},
                "context_size": {"type": "integer", "minimum": 0},
                "cost": {
                    "type": "object",
                    "properties": {
                        "amount": {"type": "number", "minimum": 0},
                        "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
                    },
                    "required": ["amount", "currency"],
                    "additionalProperties": False,
                },
            },
            "additionalProperties": False,
        },
        "session_id": {
            "type": "string",
            "description": "The session this call was a turn of: pass it back as `session_id` to continue it.",
        },
        "context_reset": {
            "type": "boolean",
            "description": "True when the session could not be resumed and a fresh one was started (if_lost: new).",
        },
    },
    "required": ["provider"],
    "additionalProperties": False,
}
"""The ``outputSchema`` of every delegation tool."""

_READ_ONLY_TOOLS: Final = frozenset({JOB_OUTPUT_TOOL_NAME, JOB_LIST_TOOL_NAME, SESSION_LIST_TOOL_NAME})


def mcp_tools(schemas: list[dict[str, Any]], delegation_tools: Mapping[str, str]) -> list[dict[str, Any]]:
    """The MCP tool list of ``schemas`` (``Host.tools()``); ``delegation_tools`` maps tool name → provider."""
    tools: list[dict[str, Any]] = []
    for schema in schemas:
        name = schema["name"]
        tool: dict[str, Any] = {"name": name, "description": schema["description"], "inputSchema": schema["parameters"]}
        if name in delegation_tools:
            tool["outputSchema"] = json.loads(json.dumps(DELEGATION_OUTPUT_SCHEMA))
            tool["annotations"] = {"readOnlyHint": False, "openWorldHint": True}
        elif name == CHANGES_APPLY_TOOL_NAME:
            # It writes the parent's working tree (never the index, HEAD or branches).
            tool["annotations"] = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False}
        else:
            tool["annotations"] = {"readOnlyHint": name in _READ_ONLY_TOOLS}
        tools.append(tool)
    return tools


def structured_content(
    provider: str,
    result: ToolResult,
    settled: tuple[str, SubagentResult] | None,
    usage: RunUsage | None = None,
    session_id: str | None = None,
) -> dict[str, Any]:
    """A delegation call's ``structuredContent``: its model-visible text, the settled run's facts (with its usage
    totals, checked numbers only) or the job id, and the session (a failed call carries it too: ``session_id`` comes
    from the call's hooks)."""
    content: dict[str, Any] = {"provider": provider, ("error" if result.is_error else "output"): _text(result)}
    if session_id is not None:
        content["session_id"] = session_id
    if isinstance(result, ToolSuccess) and isinstance(result.value, dict) and result.value.get("context_reset") is True:
        content["context_reset"] = True
    if settled is not None:
        run_id, run_result = settled
        content["run_id"] = run_id
        content["stop_reason"] = run_result.stop_reason
        if run_result.diagnostic:
            content["diagnostic"] = run_result.diagnostic
        changes = (
            result.value.get("changes") if isinstance(result, ToolSuccess) and isinstance(result.value, dict) else None
        )
        if isinstance(changes, dict):
            content["changes"] = changes
        if usage is not None:
            content["usage"] = usage.to_json()
    elif isinstance(result, ToolSuccess) and isinstance(result.value, dict):
        job_id = result.value.get("job_id")
        if isinstance(job_id, str):
            content["job_id"] = job_id
        run_id = result.value.get("run_id")
        if isinstance(run_id, str):
            content["run_id"] = run_id  # the run a background job will record (minted at its start)
    return content


def call_tool_result(result: ToolResult, structured: dict[str, Any] | None) -> dict[str, Any]:
    """The registry's exact content and ``isError``, plus ``structuredContent`` when given."""
    answer: dict[str, Any] = {
        "content": [{"type": "text", "text": _text_of(block)} for block in result.content],
        "isError": result.is_error,
    }
    if structured is not None:
        answer["structuredContent"] = structured
    return answer


def _text(result: ToolResult) -> str:
    # The registry's delegation results are one text block; several would be joined, each kept whole.
    return "\n".join(_text_of(block) for block in result.content)


def _text_of(block: ContentBlock) -> str:
    if block.get("type") == "text" and isinstance(block.get("text"), str):
        return str(block["text"])
    # The host's tools return text only; any other block is shown as its JSON.
    return json.dumps(block, ensure_ascii=False)
