"""Poll a condition fast first, backing off to the spec's 15 ms cadence (used where no exit event exists)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import anyio

__all__ = ["poll_until"]

# Longest interval between two liveness / returncode polls (the spec's 15 ms cadence).
_POLL_INTERVAL_S: Final = 0.015
# First interval of a wait: a child told to exit usually does so within a few ms, so the poll starts fast and
# backs off geometrically to the cap; exit detection then lags the real exit by at most a quarter of the time
# waited, and a long wait still costs one poll per 15 ms.
_POLL_FIRST_INTERVAL_S: Final = 0.0005
# Growth factor of the poll interval from one poll to the next within one wait.
_POLL_BACKOFF: Final = 1.25


async def poll_until(condition: Callable[[], bool]) -> None:
    """Return once ``condition()`` holds, polling fast first and backing off to the 15 ms cadence (unbounded)."""
    # Polling is deliberate: no event fires when a reaped leader's descendants die, and waiting for pipe EOF
    # would hang on a grandchild that inherited stdout. The leader's own exit is awaited, not polled.
    interval = _POLL_FIRST_INTERVAL_S
    while not condition():
        await anyio.sleep(interval)
        interval = min(interval * _POLL_BACKOFF, _POLL_INTERVAL_S)
