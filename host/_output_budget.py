"""The bound on the output text a run keeps (``max_output_bytes``), shared by both providers.

Past the bound a run ends ``error`` with category ``output-limit`` (docs/behaviour.md, ACP provider and DSH SDK
provider: deviations): the text up to the bound is kept, cut at a character boundary, and the awaited work of the
run (the prompt) is cancelled so the run settles and its child goes down the teardown ladder.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable, Iterator
from typing import TypeVar

import anyio

from host.stream import StreamChunk, TextDelta

__all__ = ["OutputBudget"]

_T = TypeVar("_T")


class OutputBudget:
    """Counts the UTF-8 bytes of a run's output text against ``limit``; ``exceeded`` once more was offered."""

    def __init__(self, limit: int) -> None:
        self._room = limit
        self._scope: anyio.CancelScope | None = None
        self.exceeded = False

    def admit(self, text: str) -> str:
        """Return the part of ``text`` within the bound; past it, set ``exceeded`` and cancel the work in ``run``."""
        if self.exceeded:
            return ""
        # A child may stream half of a surrogate pair: count it as the 3 bytes it encodes to, never fail on it.
        data = text.encode("utf-8", "surrogatepass")
        if len(data) <= self._room:
            self._room -= len(data)
            return text
        # Cut at a character boundary: back off over the continuation bytes (0b10xxxxxx) of a split character.
        cut = self._room
        while cut > 0 and data[cut] & 0xC0 == 0x80:
            cut -= 1
        kept = data[:cut].decode("utf-8", "surrogatepass")
        self._room = 0
        self.exceeded = True
        if self._scope is not None:
            self._scope.cancel()
        return kept

    def admitted(self, chunks: Iterable[StreamChunk]) -> Iterator[StreamChunk]:
        """Yield ``chunks`` while within the bound: a text delta past it is cut (dropped when nothing is left),
        and nothing follows it."""
        for chunk in chunks:
            if self.exceeded:
                return
            if isinstance(chunk, TextDelta):
                text = self.admit(chunk.text)
                if text != chunk.text:
                    if text:
                        yield chunk.model_copy(update={"text": text})
                    return
            yield chunk

    async def run(self, work: Awaitable[_T]) -> _T | None:
        """Await ``work``; ``None`` when the bound was exceeded meanwhile (``work`` is then cancelled)."""
        with anyio.CancelScope() as self._scope:
            if self.exceeded:
                self._scope.cancel()
            return await work
        return None
