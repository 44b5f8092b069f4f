"""The bound on what a run keeps (``max_output_bytes``), shared by both providers.

Every chunk a run keeps counts against the bound (docs/behaviour.md#stream-output-bound): a text or reasoning delta
its text's UTF-8 bytes; a ``block-end`` that closes a block whose deltas streamed only what its content adds beyond
them; any other chunk its compact JSON bytes. Past the bound a run ends ``error`` with category ``output-limit``
(docs/behaviour.md, ACP provider and DSH SDK provider: deviations): the delta that crosses it is cut at a character
boundary, any other crossing chunk is dropped, nothing follows, and the awaited work of the run (the prompt) is
cancelled so the run settles and its child goes down the teardown ladder.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Iterable, Iterator, Mapping
from typing import Final, TypeVar

import anyio

from host._text import utf8_size
from host.stream import BlockEnd, ReasoningDelta, StreamChunk, TextDelta

__all__ = ["OutputBudget", "json_bytes"]

_T = TypeVar("_T")

_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=repr)
_TEXTUAL: Final = frozenset({"text", "reasoning"})


def json_bytes(value: object) -> int:
    """The UTF-8 bytes of ``value``'s compact JSON (a lone surrogate counts as the 3 bytes it encodes to)."""
    return len(_ENCODER.encode(value).encode("utf-8", "surrogatepass"))


class OutputBudget:
    """Counts the bytes of what a run keeps against ``limit``; ``exceeded`` once more was offered."""

    def __init__(self, limit: int) -> None:
        self._room = limit
        self._scope: anyio.CancelScope | None = None
        # The delta bytes already counted per block index, until the block's first `block-end` uses them up.
        self._streamed: dict[int, int] = {}
        self.exceeded = False

    def admit(self, text: str) -> str:
        """Return the part of ``text`` within the bound; past it, set ``exceeded`` and cancel the work in ``run``."""
        return self._admit_text(text)[0]

    def _admit_text(self, text: str) -> tuple[str, int]:
        """The part of ``text`` within the bound and its UTF-8 bytes."""
        if self.exceeded:
            return "", 0
        size = utf8_size(text)
        if size <= self._room:
            self._room -= size
            return text, size
        # A child may stream half of a surrogate pair: count it as the 3 bytes it encodes to, never fail on it.
        data = text.encode("utf-8", "surrogatepass")
        # Cut at a character boundary: back off over the continuation bytes (0b10xxxxxx) of a split character.
        cut = self._room
        while cut > 0 and data[cut] & 0xC0 == 0x80:
            cut -= 1
        kept = data[:cut].decode("utf-8", "surrogatepass")
        self._exceed()
        return kept, cut

    def admit_chunk(self, chunk: StreamChunk) -> StreamChunk | None:
        """Return ``chunk`` (a delta possibly cut) when it fits; ``None`` once the bound is exceeded."""
        if self.exceeded:
            return None
        if isinstance(chunk, (TextDelta, ReasoningDelta)):
            text = chunk.text
            size = utf8_size(text)
            fits = size <= self._room
            if fits:  # the hot path: the whole delta, no cut to compute
                self._room -= size
            else:
                text, size = self._admit_text(text)  # cut at the bound, which is now exceeded
            if size:
                streamed = self._streamed
                streamed[chunk.index] = streamed.get(chunk.index, 0) + size
            if fits:
                return chunk
            return chunk.model_copy(update={"text": text}) if text else None
        cost = self._block_end_cost(chunk) if isinstance(chunk, BlockEnd) else json_bytes(chunk.model_dump())
        if cost > self._room:
            self._exceed()
            return None
        self._room -= cost
        return chunk

    def admitted(self, chunks: Iterable[StreamChunk]) -> Iterator[StreamChunk]:
        """Yield ``chunks`` while within the bound: the crossing one is cut (a delta) or dropped, nothing follows."""
        for chunk in chunks:
            kept = self.admit_chunk(chunk)
            if kept is not None:
                yield kept
            if self.exceeded:
                return

    def _block_end_cost(self, chunk: BlockEnd) -> int:
        streamed = self._streamed.pop(chunk.index, None)
        if streamed is None:
            return json_bytes(chunk.model_dump())
        block = chunk.block
        text = block.get("text")
        if block.get("type") in _TEXTUAL and isinstance(text, str):
            rest: Mapping[str, object] = {key: value for key, value in block.items() if key not in ("type", "text")}
            size = utf8_size(text) + (json_bytes(rest) if rest else 0)
        else:
            size = json_bytes(block)
        return max(0, size - streamed)

    def _exceed(self) -> None:
        self._room = 0
        self.exceeded = True
        if self._scope is not None:
            self._scope.cancel()

    async def run(self, work: Awaitable[_T]) -> _T | None:
        """Await ``work``; ``None`` when the bound was exceeded meanwhile (``work`` is then cancelled)."""
        with anyio.CancelScope() as self._scope:
            if self.exceeded:
                self._scope.cancel()
            return await work
        return None
