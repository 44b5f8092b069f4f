"""Caller-owned cooperative cancellation: the one-shot signal, fuse, deadlines and an anyio bridge.

Every tool call and subagent run is cancelled through a ``CancelSignal`` owned by its caller, never through an
anyio cancel scope (docs/behaviour.md#registry-cancel-signal, #registry-deadline, #registry-anyio-mapping).
"""

from __future__ import annotations

from host.cancel._bridge import cancel_scope_on
from host.cancel._deadline import MAX_TIMER_DELAY_MS, TimeoutReason, deadline, timeout_of
from host.cancel._fuse import fuse
from host.cancel._signal import CancelController, CancelSignal

__all__ = [
    "MAX_TIMER_DELAY_MS",
    "CancelController",
    "CancelSignal",
    "TimeoutReason",
    "cancel_scope_on",
    "deadline",
    "fuse",
    "timeout_of",
]
