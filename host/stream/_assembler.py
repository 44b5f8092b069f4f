"""Assemble a run's stream chunks into content blocks, in first-seen order.

``interrupted_blocks()`` is the prefix worth keeping after a local cancel: visible text and reasoning only.
``blocks(stop_reason)`` is the normal assembly. A delta for a closed block, or for an open block of another type,
is ignored; read-outs are fresh copies, so callers may keep them.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Final

from host._json import ContentBlock
from host._text import joined_text
from host.stream._chunks import BlockStart, ReasoningDelta, StreamChunk, TextDelta, ToolCallChunk

__all__ = ["BlockAssembler"]

_TEXTUAL: Final = frozenset({"text", "reasoning"})
# Stop reasons whose tool calls never ran to a result, so an assembled message must not show them.
_DROPS_TOOL_CALLS: Final = frozenset({"max-tokens"})


@dataclass(slots=True)
class _Block:
    """One block of the run: open while deltas arrive, closed once a ``block-end`` fixed its content."""

    type: str
    parts: list[str] = field(default_factory=list[str])
    tool_call: ToolCallChunk | None = None
    closed: ContentBlock | None = None


class BlockAssembler:
    """Feed chunks in delivery order; read the assembled blocks at any time."""

    def __init__(self) -> None:
        self._blocks: dict[int, _Block] = {}

    def feed(self, chunk: StreamChunk) -> None:
        """Apply one chunk."""
        if isinstance(chunk, (TextDelta, ReasoningDelta)):
            block_type = "text" if isinstance(chunk, TextDelta) else "reasoning"
            block = self._blocks.get(chunk.index)
            if block is None:
                self._blocks[chunk.index] = _Block(block_type, parts=[chunk.text])
            elif block.closed is None and block.type == block_type:
                block.parts.append(chunk.text)
            return
        block = self._blocks.get(chunk.index)
        if isinstance(chunk, ToolCallChunk):
            if block is None:
                self._blocks[chunk.index] = _Block("tool-call", tool_call=chunk)
            elif block.closed is None and block.type == "tool-call":
                block.tool_call = chunk
        elif isinstance(chunk, BlockStart):
            if block is None:
                self._blocks[chunk.index] = _Block(chunk.block_type)
        else:
            payload = copy.deepcopy(chunk.block)
            block_type = payload.get("type")
            block_type = block_type if isinstance(block_type, str) else "unknown"
            if block is None:
                self._blocks[chunk.index] = _Block(block_type, closed=payload)
            elif block.closed is None:
                block.type = block_type
                block.closed = payload

    def interrupted_blocks(self) -> list[ContentBlock]:
        """Return the visible text and reasoning streamed so far; tool calls and unknown blocks are dropped."""
        kept: list[ContentBlock] = []
        for block in self._blocks.values():
            if block.type not in _TEXTUAL:
                continue
            content = self._textual_content(block)
            if content is not None:
                kept.append(content)
        return kept

    def blocks(self, stop_reason: str) -> list[ContentBlock]:
        """Return the normal assembly; for ``max-tokens`` tool-call blocks are dropped."""
        assembled: list[ContentBlock] = []
        for block in self._blocks.values():
            if block.type == "tool-call" and stop_reason in _DROPS_TOOL_CALLS:
                continue
            if block.type in _TEXTUAL:
                content = self._textual_content(block)
                if content is not None:
                    assembled.append(content)
            elif block.closed is not None:
                assembled.append(copy.deepcopy(block.closed))
            elif block.tool_call is not None:
                call = block.tool_call
                assembled.append(
                    {
                        "type": "tool-call",
                        "tool_call_id": call.tool_call_id,
                        "kind": call.kind,
                        "status": call.status,
                        "title": call.title,
                    }
                )
        return assembled

    @staticmethod
    def _textual_content(block: _Block) -> ContentBlock | None:
        """Return a text or reasoning block's content, or ``None`` when its text is blank (kept text is not trimmed)."""
        if block.closed is not None:
            text = block.closed.get("text")
            if isinstance(text, str) and text.strip():
                return copy.deepcopy(block.closed)
            return None
        text = joined_text(block.parts)
        return {"type": block.type, "text": text} if text.strip() else None
