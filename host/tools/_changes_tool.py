"""``changes_apply``: apply (or check) a worktree run's kept changes on the parent's current working tree.

All or nothing: on any conflict nothing is written and the conflicting paths are listed. The paths are the child's
file names (child text): they appear in this tool's result, never in a diagnostic or an error message.
"""

from __future__ import annotations

from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, TypeAdapter

from host._json import ContentBlock, JsonValue
from host.tools._define import define_tool
from host.tools._types import ToolDefinition, ToolOutput, ToolRunContext
from host.workspace import Workspaces

__all__ = ["CHANGES_APPLY_TOOL_NAME", "ChangesApplyValue", "apply_text", "create_changes_apply_tool"]

CHANGES_APPLY_TOOL_NAME: Final = "changes_apply"
_DESCRIPTION: Final = (
    "Apply the changes a worktree delegation kept (its result ends with a [changes: ...] line) to your current "
    "working tree with a three-way merge. All or nothing: if any file conflicts, nothing is changed and the "
    "conflicting paths are listed. Set `check` to only report whether it would apply."
)
_APPLIED: Final = "applied the changes of run {run_id} ({count} {noun}) to {repo}"
_CLEAN: Final = "the changes of run {run_id} ({count} {noun}) apply cleanly to {repo}; nothing was written (check)"
_CONFLICT: Final = "the changes of run {run_id} conflict with {repo}; nothing was applied. Conflicting paths:"


class _ApplyArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    run_id: Annotated[StrictStr, Field(min_length=1, description="The run whose changes to apply.")]
    check: StrictBool = Field(default=False, description="Only report whether the changes apply; write nothing.")


class ChangesApplyValue(BaseModel):
    """The value of ``changes_apply``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_id: str
    repo: str
    applied: bool
    checked: bool
    conflicts: list[str]
    files: int


def apply_text(value: ChangesApplyValue, *, neutralize: bool = False) -> str:
    """The text of an apply outcome; with ``neutralize`` the paths are escaped for a terminal (repr of controls)."""
    count = value.files
    fields = {"run_id": value.run_id, "count": count, "noun": "file" if count == 1 else "files", "repo": value.repo}
    if value.conflicts:
        lines = [_CONFLICT.format(**fields)]
        for path in value.conflicts:
            shown = path.encode("unicode_escape").decode("ascii") if neutralize else path
            lines.append(f"- {shown}")
        return "\n".join(lines)
    return (_CLEAN if value.checked else _APPLIED).format(**fields)


def _render(_arguments: JsonValue, value: ChangesApplyValue) -> list[ContentBlock]:
    return [{"type": "text", "text": apply_text(value)}]


def create_changes_apply_tool(workspaces: Workspaces) -> ToolDefinition:
    """Build ``changes_apply`` over ``workspaces``."""

    async def apply(args: _ApplyArgs, _ctx: ToolRunContext) -> JsonValue:
        return await apply_value(workspaces, args.run_id, check=args.check)

    return define_tool(
        CHANGES_APPLY_TOOL_NAME,
        _DESCRIPTION,
        _ApplyArgs,
        ToolOutput(TypeAdapter(ChangesApplyValue), _render),
        apply,
    )


async def apply_value(workspaces: Workspaces, run_id: str, *, check: bool) -> dict[str, JsonValue]:
    """Apply (or check) and return the tool value as JSON."""
    outcome = await workspaces.apply(run_id, check_only=check)
    return ChangesApplyValue(
        run_id=run_id,
        repo=outcome.repo,
        applied=outcome.applied,
        checked=check,
        conflicts=outcome.conflicts,
        files=len(outcome.files),
    ).model_dump(mode="json")
