"""Map ACP ``session/update`` payloads onto stream chunks (docs/behaviour.md#stream-acp-mapping).

The mapper keeps a *current block*, the block the previous chunk targeted: consecutive message (or thought) text
continues it, and any other chunk in between starts a new one. Tool calls keep one index per ``toolCallId``, and
an update keeps the fields it does not carry. Peer input is read leniently: anything unexpected maps to nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal, TypeVar, cast

from host.diagnostics import acp_tool_kind
from host.stream._chunks import (
    BlockStart,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    ToolCallChunk,
    reasoning_delta,
    text_delta,
)

__all__ = ["AcpChunkMapper"]

_Opening = TypeVar("_Opening", BlockStart, ToolCallChunk)

_CONTENT_UPDATES: Final[dict[str, Literal["text", "reasoning"]]] = {
    "agent_message_chunk": "text",
    "agent_thought_chunk": "reasoning",
}


class AcpChunkMapper:
    """One run's ACP update mapper; allocates the run's block indexes from 0."""

    def __init__(self) -> None:
        self._next_index = 0
        # The current block: the index and block type the previous chunk targeted (-1/None before any chunk).
        self._current_index = -1
        self._current_type: str | None = None
        self._tool_calls: dict[str, ToolCallChunk] = {}

    def map_update(self, update: Mapping[str, object]) -> list[StreamChunk]:
        """Map one ``params.update`` object to the chunks it contributes (possibly none)."""
        kind = update.get("sessionUpdate")
        if not isinstance(kind, str):
            return []
        block_type = _CONTENT_UPDATES.get(kind)
        if block_type is not None:
            chunk = self._map_content(block_type, update.get("content"))
        elif kind == "tool_call" or kind == "tool_call_update":
            chunk = self._map_tool_call(update, is_update=kind == "tool_call_update")
        else:
            chunk = None
        return [] if chunk is None else [chunk]

    def _map_content(self, block_type: Literal["text", "reasoning"], content: object) -> StreamChunk | None:
        # Decoded JSON objects are plain dicts: test that first, the ABC check is slow on the streaming hot path.
        if type(content) is not dict and not isinstance(content, Mapping):
            return None
        content = cast("Mapping[str, object]", content)
        content_type = content.get("type")
        if content_type != "text":
            return self._open(
                BlockStart(
                    index=self._allocate(), block_type=content_type if isinstance(content_type, str) else "unknown"
                )
            )
        text = content.get("text")
        if not isinstance(text, str) or not text:
            return None
        if self._current_type == block_type:
            index = self._current_index
        else:
            index = self._current_index = self._allocate()
            self._current_type = block_type
        if type(text) is not str:  # a str subclass: let validation normalise it, as before
            return TextDelta(index=index, text=text) if block_type == "text" else ReasoningDelta(index=index, text=text)
        # The hot path: every value is checked above, so the delta is built without validation.
        return text_delta(index, text) if block_type == "text" else reasoning_delta(index, text)

    def _map_tool_call(self, update: Mapping[str, object], *, is_update: bool) -> ToolCallChunk | None:
        tool_call_id = update.get("toolCallId")
        if not isinstance(tool_call_id, str):
            return None
        previous = self._tool_calls.get(tool_call_id)
        index = previous.index if previous is not None else self._allocate()
        if is_update and previous is not None:
            raw_kind = update.get("kind")
            status, title = update.get("status"), update.get("title")
            chunk = ToolCallChunk(
                index=index,
                tool_call_id=tool_call_id,
                kind=acp_tool_kind(raw_kind) if raw_kind is not None else previous.kind,
                status=status if isinstance(status, str) else previous.status,
                title=title if isinstance(title, str) else previous.title,
            )
        else:
            status, title = update.get("status"), update.get("title")
            chunk = ToolCallChunk(
                index=index,
                tool_call_id=tool_call_id,
                kind=acp_tool_kind(update.get("kind")),
                status=status if isinstance(status, str) else None,
                title=title if isinstance(title, str) else None,
            )
        self._tool_calls[tool_call_id] = chunk
        return self._open(chunk)

    def _open(self, chunk: _Opening) -> _Opening:
        """Make ``chunk``'s block the current one (a block start's type is its ``block_type``)."""
        self._current_index = chunk.index
        self._current_type = chunk.block_type if isinstance(chunk, BlockStart) else chunk.type
        return chunk

    def _allocate(self) -> int:
        index = self._next_index
        self._next_index += 1
        return index
