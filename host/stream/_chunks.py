"""The normalized stream chunk vocabulary both providers map their child's live updates into.

Chunks are frozen pydantic models discriminated by ``type``; ``index`` is a host-allocated block index, unique
within a run. Fields are snake_case in Python and in the serialized form. ``text_delta``/``reasoning_delta`` build
deltas from already-checked values without validation, for the streaming hot path.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, TypeAlias, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from host._json import ContentBlock

__all__ = [
    "BlockEnd",
    "BlockStart",
    "ReasoningDelta",
    "StreamChunk",
    "TextDelta",
    "ToolCallChunk",
    "construct_trusted",
    "reasoning_delta",
    "stream_chunk_adapter",
    "text_delta",
]

_M = TypeVar("_M", bound=BaseModel)


class _Chunk(BaseModel):
    # Built on first use (inherited): a run builds only the chunk types it meets (the command line's cold start).
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

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

stream_chunk_adapter: TypeAdapter[StreamChunk] = TypeAdapter(StreamChunk, config=ConfigDict(defer_build=True))
"""Validates a serialized chunk back into its model (by ``type``)."""


_new_instance: Final = object.__new__
_set_slot: Final = object.__setattr__
_DELTA_FIELDS_SET: Final = frozenset({"index", "text"})


def construct_trusted(cls: type[_M], values: dict[str, Any], fields_set: frozenset[str]) -> _M:
    """Build a model from host-checked values without validating them (the streaming hot path).

    Equivalent to ``cls(**explicit)`` when ``values`` holds every field, in declaration order, each already of its
    field's type, and ``fields_set`` names the explicitly passed ones. It sets exactly the four slots pydantic's own
    ``model_construct`` sets, without its per-field alias and default resolution, which costs more than validating.
    """
    model = _new_instance(cls)
    _set_slot(model, "__dict__", values)
    _set_slot(model, "__pydantic_fields_set__", set(fields_set))
    _set_slot(model, "__pydantic_extra__", None)
    _set_slot(model, "__pydantic_private__", None)
    return model


def text_delta(index: int, text: str) -> TextDelta:
    """``TextDelta(index=index, text=text)`` for values the caller already checked (no validation)."""
    # construct_trusted inlined: this runs once per streamed chunk.
    delta = _new_instance(TextDelta)
    _set_slot(delta, "__dict__", {"index": index, "type": "text-delta", "text": text})
    _set_slot(delta, "__pydantic_fields_set__", {"index", "text"})  # == _DELTA_FIELDS_SET; a literal builds faster
    _set_slot(delta, "__pydantic_extra__", None)
    _set_slot(delta, "__pydantic_private__", None)
    return delta


def reasoning_delta(index: int, text: str) -> ReasoningDelta:
    """``ReasoningDelta(index=index, text=text)`` for values the caller already checked (no validation)."""
    return construct_trusted(
        ReasoningDelta, {"index": index, "type": "reasoning-delta", "text": text}, _DELTA_FIELDS_SET
    )
