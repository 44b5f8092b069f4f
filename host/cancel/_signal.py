"""The one-shot, first-reason-wins cancel token (docs/behaviour.md#registry-cancel-signal).

``CancelController.cancel`` sets the state once, then runs listeners synchronously in registration order; a raising
listener is logged and never stops the others. The ``anyio.Event`` behind ``wait()`` is created lazily, so
controllers can be built outside an event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio

__all__ = ["CancelController", "CancelListener", "CancelSignal"]

logger = logging.getLogger(__name__)

CancelListener = Callable[["CancelSignal"], None]


class _SignalState:
    """The shared state behind one signal; only its controller (and this module) drive ``cancel``."""

    __slots__ = ("cancelled", "event", "listeners", "next_key", "reason")

    def __init__(self) -> None:
        self.cancelled = False
        self.reason: object | None = None
        self.listeners: dict[int, CancelListener] = {}
        self.next_key = 0
        self.event: anyio.Event | None = None

    def cancel(self, signal: CancelSignal, reason: object) -> None:
        if self.cancelled:
            return
        self.cancelled = True
        self.reason = reason
        if self.event is not None:
            self.event.set()
        # Pop one at a time so a listener that removes a later one (fuse's auto-dispose) is honoured.
        while self.listeners:
            key = next(iter(self.listeners))
            listener = self.listeners.pop(key)
            try:
                listener(signal)
            except Exception:  # containment boundary: one listener never stops the others
                logger.exception("cancel signal listener failed")


class CancelSignal:
    """The read-only side of a ``CancelController``."""

    __slots__ = ("_state",)

    def __init__(self, _state: _SignalState | None = None) -> None:
        self._state = _state if _state is not None else _SignalState()

    @property
    def cancelled(self) -> bool:
        """Whether the owner has cancelled."""
        return self._state.cancelled

    @property
    def reason(self) -> object | None:
        """The reason given by the first ``cancel()``; ``None`` until then."""
        return self._state.reason

    def add_listener(self, listener: CancelListener) -> Callable[[], None]:
        """Call ``listener(signal)`` once on cancellation; return an idempotent remover.

        A listener added to an already-cancelled signal is never called: check ``cancelled`` first.
        """
        state = self._state
        if state.cancelled:
            return _noop
        key = state.next_key
        state.next_key += 1
        state.listeners[key] = listener

        def remove() -> None:
            state.listeners.pop(key, None)

        return remove

    async def wait(self) -> None:
        """Return once the signal is cancelled."""
        state = self._state
        if state.cancelled:
            return
        if state.event is None:
            state.event = anyio.Event()
        await state.event.wait()

    def __repr__(self) -> str:
        state = self._state
        text = f"cancelled reason={state.reason!r}" if state.cancelled else "pending"
        return f"<CancelSignal {text}>"


class CancelController:
    """The owner side: ``cancel(reason)`` once; ``signal`` is what callees observe."""

    __slots__ = ("_signal", "_state")

    def __init__(self) -> None:
        self._state = _SignalState()
        self._signal = CancelSignal(self._state)

    @property
    def signal(self) -> CancelSignal:
        """The signal this controller cancels."""
        return self._signal

    def cancel(self, reason: object = None) -> None:
        """Cancel with ``reason``; the first call wins and later calls do nothing."""
        self._state.cancel(self._signal, reason)


def _noop() -> None:
    return None
