"""The normalized stream chunk vocabulary both providers map their child's live updates into.

Chunks are frozen pydantic models discriminated by ``type``; ``index`` is a host-allocated block index, unique
within a run. Fields are snake_case in Python and in the serialized form.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from host._json import ContentBlock

__all__ = [
    "BlockEnd",
    "BlockStart",
    "ReasoningDelta",
    "StreamChunk",
    "TextDelta",
    "ToolCallChunk",
    "stream_chunk_adapter",
]


class _Chunk(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int
    """The host-allocated block index the chunk targets."""


class TextDelta(_Chunk):
    """Appends ``text`` to text block ``index``, opening it if unseen."""

    type: Literal["text-delta"] = "text-delta"
    text: str


class ReasoningDelta(_Chunk):
    """Appends ``text`` to reasoning block ``index``, opening it if unseen."""

    type: Literal["reasoning-delta"] = "reasoning-delta"
    text: str


class ToolCallChunk(_Chunk):
    """Opens or replaces the snapshot of tool-call block ``index``."""

    type: Literal["tool-call"] = "tool-call"
    tool_call_id: str
    kind: str
    """An ACP tool kind from the closed set, or ``unknown``."""
    status: str | None = None
    title: str | None = None


class BlockStart(_Chunk):
    """Opens block ``index`` with ``block_type``; types other than text, reasoning and tool-call are unknown."""

    type: Literal["block-start"] = "block-start"
    block_type: str


class BlockEnd(_Chunk):
    """Closes block ``index`` with its authoritative content; the block's type becomes ``block["type"]``."""

    type: Literal["block-end"] = "block-end"
    block: ContentBlock


StreamChunk: TypeAlias = Annotated[
    TextDelta | ReasoningDelta | ToolCallChunk | BlockStart | BlockEnd, Field(discriminator="type")
]

stream_chunk_adapter: TypeAdapter[StreamChunk] = TypeAdapter(StreamChunk)
"""Validates a serialized chunk back into its model (by ``type``)."""
