"""A run's delivered chunks, kept as runs of text rather than one model per chunk.

``ChunkLog`` is an append-only sequence of stream chunks that stores each run of consecutive deltas of one type
and index as a list of its texts (a pointer per delta, the texts shared with the assembler). Reading it builds
the chunks again, equal to the ones appended and in the same order. A 100 000-delta stream costs under a
megabyte instead of a pydantic model per delta.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Sequence
from typing import cast, overload

from host.stream._chunks import ReasoningDelta, StreamChunk, TextDelta, reasoning_delta, text_delta

__all__ = ["ChunkLog"]


class _DeltaRun:
    """Consecutive deltas of one type on one block index: their texts, in order."""

    __slots__ = ("index", "reasoning", "texts")

    def __init__(self, index: int, *, reasoning: bool, text: str) -> None:
        self.index = index
        self.reasoning = reasoning
        self.texts = [text]

    def chunk(self, position: int) -> StreamChunk:
        text = self.texts[position]
        return reasoning_delta(self.index, text) if self.reasoning else text_delta(self.index, text)


class ChunkLog(Sequence[StreamChunk]):
    """The chunks of one run in delivery order; ``append`` while it is open, then read it as a sequence."""

    __slots__ = ("_length", "_segments", "_starts")

    def __init__(self) -> None:
        # Each segment is a run of deltas or one other chunk; _starts[i] is the position of segment i's first chunk.
        self._segments: list[_DeltaRun | StreamChunk] = []
        self._starts: list[int] = []
        self._length = 0

    def append(self, chunk: StreamChunk) -> None:
        """Record ``chunk`` after the previous ones."""
        chunk_type = type(chunk)
        # Exact types only: a subclass instance is kept as it is, so reading the log gives back that object.
        if chunk_type is TextDelta or chunk_type is ReasoningDelta:
            delta = cast("TextDelta | ReasoningDelta", chunk)
            reasoning = chunk_type is ReasoningDelta
            last = self._segments[-1] if self._segments else None
            if isinstance(last, _DeltaRun) and last.index == delta.index and last.reasoning == reasoning:
                last.texts.append(delta.text)
            else:
                self._open(_DeltaRun(delta.index, reasoning=reasoning, text=delta.text))
        else:
            self._open(chunk)
        self._length += 1

    def _open(self, segment: _DeltaRun | StreamChunk) -> None:
        self._starts.append(self._length)
        self._segments.append(segment)

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, position: int) -> StreamChunk: ...

    @overload
    def __getitem__(self, position: slice) -> list[StreamChunk]: ...

    def __getitem__(self, position: int | slice) -> StreamChunk | list[StreamChunk]:
        if isinstance(position, slice):
            return [self[i] for i in range(*position.indices(self._length))]
        if position < 0:
            position += self._length
        if not 0 <= position < self._length:
            raise IndexError("chunk log index out of range")
        segment_at = bisect_right(self._starts, position) - 1
        segment = self._segments[segment_at]
        if isinstance(segment, _DeltaRun):
            return segment.chunk(position - self._starts[segment_at])
        return segment

    def __iter__(self) -> Iterator[StreamChunk]:
        for segment in self._segments:
            if isinstance(segment, _DeltaRun):
                for position in range(len(segment.texts)):
                    yield segment.chunk(position)
            else:
                yield segment

    def __eq__(self, other: object) -> bool:
        # Equal to any list, tuple or log holding equal chunks in the same order, as a list would be.
        if not isinstance(other, ChunkLog | list | tuple):
            return NotImplemented
        items = cast("Sequence[object]", other)
        return len(self) == len(items) and all(mine == theirs for mine, theirs in zip(self, items, strict=True))

    def __hash__(self) -> int:
        raise TypeError("unhashable type: 'ChunkLog'")  # it grows while the run streams, like a list

    def __repr__(self) -> str:
        return repr(list(self))
