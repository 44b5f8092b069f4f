"""Map ACP ``session/update`` payloads onto stream chunks (stream-and-results.md §9.1).

The mapper keeps a *current block*, the block the previous chunk targeted: consecutive message (or thought) text
continues it, and any other chunk in between starts a new one. Tool calls keep one index per ``toolCallId``, and
an update keeps the fields it does not carry. Peer input is read leniently: anything unexpected maps to nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal, cast

from host.diagnostics import acp_tool_kind
from host.stream._chunks import BlockStart, ReasoningDelta, StreamChunk, TextDelta, ToolCallChunk

__all__ = ["AcpChunkMapper"]

_CONTENT_UPDATES: Final[dict[str, Literal["text", "reasoning"]]] = {
    "agent_message_chunk": "text",
    "agent_thought_chunk": "reasoning",
}


@dataclass(slots=True)
class _Current:
    index: int
    type: str


class AcpChunkMapper:
    """One run's ACP update mapper; allocates the run's block indexes from 0."""

    def __init__(self) -> None:
        self._next_index = 0
        self._current: _Current | None = None
        self._tool_calls: dict[str, ToolCallChunk] = {}

    def map_update(self, update: Mapping[str, object]) -> list[StreamChunk]:
        """Map one ``params.update`` object to the chunks it contributes (possibly none)."""
        kind = update.get("sessionUpdate")
        if not isinstance(kind, str):
            return []
        if kind in _CONTENT_UPDATES:
            chunk = self._map_content(_CONTENT_UPDATES[kind], update.get("content"))
        elif kind in ("tool_call", "tool_call_update"):
            chunk = self._map_tool_call(update, is_update=kind == "tool_call_update")
        else:
            chunk = None
        if chunk is None:
            return []
        self._current = _Current(chunk.index, _chunk_block_type(chunk))
        return [chunk]

    def _map_content(self, block_type: Literal["text", "reasoning"], content: object) -> StreamChunk | None:
        if not isinstance(content, Mapping):
            return None
        content = cast(Mapping[str, object], content)
        content_type = content.get("type")
        if content_type != "text":
            return BlockStart(
                index=self._allocate(), block_type=content_type if isinstance(content_type, str) else "unknown"
            )
        text = content.get("text")
        if not isinstance(text, str) or not text:
            return None
        current = self._current
        index = current.index if current is not None and current.type == block_type else self._allocate()
        if block_type == "text":
            return TextDelta(index=index, text=text)
        return ReasoningDelta(index=index, text=text)

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
        return chunk

    def _allocate(self) -> int:
        index = self._next_index
        self._next_index += 1
        return index


def _chunk_block_type(chunk: StreamChunk) -> str:
    if isinstance(chunk, TextDelta):
        return "text"
    if isinstance(chunk, ReasoningDelta):
        return "reasoning"
    if isinstance(chunk, BlockStart):
        return chunk.block_type
    return chunk.type
