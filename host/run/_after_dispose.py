"""``AfterDisposeRun``: a run whose first ``dispose`` also runs one more step (finish a record, end a span, end a
session turn). The wrappers that observe a run compose this instead of each forwarding the run's members again."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio

from host.diagnostics import SubagentResult
from host.run._contracts import SubagentRun
from host.stream import TranscriptEvent

__all__ = ["AfterDisposeRun"]


class AfterDisposeRun:
    """Forwards ``id``, ``transcript`` and ``result`` to ``inner``; the first ``dispose`` disposes ``inner`` and then,
    whatever that raised, awaits ``after`` shielded (a caller's cancel cannot skip it). Later calls only forward."""

    def __init__(self, inner: SubagentRun, after: Callable[[], Awaitable[None]]) -> None:
        self._inner = inner
        self._after: Callable[[], Awaitable[None]] | None = after

    @property
    def id(self) -> str:
        return self._inner.id

    @property
    def transcript(self) -> tuple[TranscriptEvent, ...]:
        return self._inner.transcript

    async def result(self) -> SubagentResult:
        return await self._inner.result()

    async def dispose(self) -> None:
        try:
            await self._inner.dispose()
        finally:
            after, self._after = self._after, None
            if after is not None:
                with anyio.CancelScope(shield=True):
                    await after()
