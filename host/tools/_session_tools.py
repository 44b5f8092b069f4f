"""The model-facing session tools over the host's ``SessionTable``: ``session_list`` and ``session_close``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field, StrictStr, TypeAdapter

from host._json import ContentBlock, JsonValue
from host.sessions import SessionRecord, SessionTable
from host.tools._define import define_tool
from host.tools._types import ToolDefinition, ToolOutput, ToolRunContext

__all__ = [
    "NO_SESSIONS",
    "SESSION_CLOSED_TEXT",
    "SESSION_CLOSE_TOOL_NAME",
    "SESSION_LIST_TOOL_NAME",
    "create_session_tools",
    "session_line",
]

SESSION_LIST_TOOL_NAME: Final = "session_list"
SESSION_CLOSE_TOOL_NAME: Final = "session_close"
NO_SESSIONS: Final = "(no sessions)"
"""``session_list`` with no session."""
SESSION_CLOSED_TEXT: Final = "closed session {session_id}"
"""``session_close``'s confirmation."""
_SESSION_LINE: Final = "{session_id} [{provider}] {state}, {turns} turn{s}, last used {last_used}{label}"

_SESSION_LIST_DESCRIPTION: Final = (
    "List the delegation sessions you can continue: id, provider, state (warm: its child is alive; cold: it will be "
    "resumed; closed), turns, last use and label. Pass an id as `session_id` to the provider's delegate tool."
)
_SESSION_CLOSE_DESCRIPTION: Final = (
    "Close a delegation session by id: its child is stopped and the session can no longer be continued."
)


class _ListArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built by the first call or schema read


class _CloseArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built by the first call or schema read

    session_id: Annotated[StrictStr, Field(description="The session to close.")]


def session_line(record: SessionRecord) -> str:
    """``<id> [<provider>] <state>, <n> turns, last used <time>[ — <label>]``."""
    return _SESSION_LINE.format(
        session_id=record.session_id,
        provider=record.provider,
        state=record.state,
        turns=record.turns,
        s="" if record.turns == 1 else "s",
        last_used=record.last_used,
        label=f" — {record.label}" if record.label else "",
    )


def _render_text(_arguments: JsonValue, value: str) -> list[ContentBlock]:
    return [{"type": "text", "text": value}]


_TEXT_OUTPUT: Final = ToolOutput(TypeAdapter(str), _render_text)


def create_session_tools(table: SessionTable) -> Mapping[str, ToolDefinition]:
    """Build ``session_list`` and ``session_close`` over ``table``.

    Raises (from the tools):
        SessionNotFoundError: ``session_close`` of an unknown id (``unknown session <id>``).
    """

    async def session_list(_args: _ListArgs, _ctx: ToolRunContext) -> JsonValue:
        records = await table.records()
        return "\n".join(session_line(record) for record in records) if records else NO_SESSIONS

    async def session_close(args: _CloseArgs, _ctx: ToolRunContext) -> JsonValue:
        await table.close(args.session_id)
        return SESSION_CLOSED_TEXT.format(session_id=args.session_id)

    listing, close = SESSION_LIST_TOOL_NAME, SESSION_CLOSE_TOOL_NAME
    return {
        listing: define_tool(listing, _SESSION_LIST_DESCRIPTION, _ListArgs, _TEXT_OUTPUT, session_list),
        close: define_tool(close, _SESSION_CLOSE_DESCRIPTION, _CloseArgs, _TEXT_OUTPUT, session_close),
    }
