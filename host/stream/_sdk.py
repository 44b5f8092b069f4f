"""Map validated DSH SDK root-session events onto stream chunks (docs/behaviour.md#stream-sdk-mapping).

The host allocates one block index per ``(turn, step, child index)`` on first sight, so a message's ``block-end``
closes the block its text deltas opened. Anything unexpected maps to nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeGuard, cast

from host._json import ContentBlock
from host.stream._chunks import BlockEnd, StreamChunk, TextDelta

__all__ = ["SdkChunkMapper"]


class SdkChunkMapper:
    """One run's SDK event mapper; allocates the run's block indexes from 0."""

    def __init__(self) -> None:
        self._indexes: dict[tuple[int, int, int], int] = {}

    def map_event(self, event: Mapping[str, object]) -> list[StreamChunk]:
        """Map one session event envelope (``{type, data, …}``) to the chunks it contributes (possibly none)."""
        event_type = event.get("type")
        data = event.get("data")
        if not isinstance(data, Mapping):
            return []
        data = cast(Mapping[str, object], data)
        turn, step = data.get("turn"), data.get("step")
        if not _is_int(turn) or not _is_int(step):
            return []
        if event_type == "assistant/chunk":
            return self._map_chunk(turn, step, data.get("chunk"))
        if event_type == "assistant/message":
            return self._map_message(turn, step, data.get("message"))
        return []

    def _map_chunk(self, turn: int, step: int, chunk: object) -> list[StreamChunk]:
        if not isinstance(chunk, Mapping):
            return []
        chunk = cast(Mapping[str, object], chunk)
        index, text = chunk.get("index"), chunk.get("text")
        if chunk.get("type") != "text-delta" or not _is_int(index) or not isinstance(text, str) or not text:
            return []
        return [TextDelta(index=self._host_index(turn, step, index), text=text)]

    def _map_message(self, turn: int, step: int, message: object) -> list[StreamChunk]:
        if not isinstance(message, Mapping):
            return []
        content = cast(Mapping[str, object], message).get("content")
        if not isinstance(content, Sequence) or isinstance(content, str):
            return []
        chunks: list[StreamChunk] = []
        for child_index, block in enumerate(cast(Sequence[object], content)):
            if isinstance(block, Mapping):
                payload: ContentBlock = dict(cast(Mapping[str, object], block))
                chunks.append(BlockEnd(index=self._host_index(turn, step, child_index), block=payload))
        return chunks

    def _host_index(self, turn: int, step: int, child_index: int) -> int:
        key = (turn, step, child_index)
        index = self._indexes.get(key)
        if index is None:
            index = self._indexes[key] = len(self._indexes)
        return index


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
