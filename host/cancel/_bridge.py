"""Bridge a ``CancelSignal`` into an anyio ``CancelScope`` for anyio-native code
(docs/behaviour.md#registry-anyio-mapping).

Opt-in only: the registry never does this for a tool. The scope is cancelled when the signal fires (or at once if
it already has), and the listener is removed when the block exits.
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager

import anyio

from host.cancel._signal import CancelSignal

__all__ = ["cancel_scope_on"]


@contextmanager
def cancel_scope_on(signal: CancelSignal) -> Generator[anyio.CancelScope]:
    """Open a ``CancelScope`` that ``signal`` cancels; yields the scope (check ``cancelled_caught`` after)."""
    with anyio.CancelScope() as scope:
        if signal.cancelled:
            scope.cancel()
            yield scope
            return
        remove = signal.add_listener(lambda _signal: scope.cancel())
        try:
            yield scope
        finally:
            remove()
