"""The host-wide run limit: one slot per live run, shared by foreground delegations and background jobs.

A run holds a slot from before its ``provider.start`` until it was disposed. Waiting for a slot is cancelled by the
call's (or job's) ``CancelSignal``: a caller cancelled while it waits holds no slot and starts no child
(docs/behaviour.md#results-run-slots).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio

from host.cancel import CancelSignal, cancel_scope_on

__all__ = ["RunSlots"]


class RunSlots:
    """At most ``total`` runs alive at once; the rest wait, first come first served."""

    def __init__(self, total: int) -> None:
        if total < 1:
            raise ValueError("max_concurrent_runs must be at least 1")
        self._limiter = anyio.CapacityLimiter(total)

    @property
    def total(self) -> int:
        """How many runs may be alive at once."""
        return int(self._limiter.total_tokens)

    @property
    def in_use(self) -> int:
        """How many slots are held now."""
        return self._limiter.borrowed_tokens

    def claim_nowait(self) -> object | None:
        """Take a free slot now; return its token (release it with ``release``), or ``None`` when none is free."""
        token = object()
        try:
            self._limiter.acquire_on_behalf_of_nowait(token)
        except anyio.WouldBlock:
            return None
        return token

    async def claim(self, signal: CancelSignal) -> object | None:
        """Wait for a slot unless ``signal`` fires first; return its token, or ``None`` (no slot held) if it fired."""
        if not signal.cancelled:
            # A free slot and no one queued (the limiter refuses a nowait claim past a waiter, so the order stays
            # first come, first served): taken without a cancel scope or a trip through the event loop.
            token = self.claim_nowait()
            if token is not None:
                return token
        # A token per claim: one task may hold several slots (concurrent calls from one task).
        token = object()
        with cancel_scope_on(signal):
            await self._limiter.acquire_on_behalf_of(token)
            return token
        return None

    def release(self, token: object) -> None:
        """Give back the slot ``token`` holds."""
        self._limiter.release_on_behalf_of(token)

    @asynccontextmanager
    async def hold(self, signal: CancelSignal) -> AsyncGenerator[bool]:
        """Hold a slot (``claim``) for the block; yields ``False`` without one when ``signal`` fired first, and the
        caller must then start no child."""
        token = await self.claim(signal)
        try:
            yield token is not None
        finally:
            if token is not None:
                self.release(token)
