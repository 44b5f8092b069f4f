"""``fuse``: one signal that cancels as soon as either of two sources does (docs/behaviour.md#registry-cancel-signal).

The relay copies the first source's reason; if both are already cancelled the primary's reason wins. Fusing a
signal with itself returns that same object, which is how the registry hands a body the caller's exact signal.
"""

from __future__ import annotations

from collections.abc import Callable

from host.cancel._signal import CancelController, CancelSignal

__all__ = ["fuse"]


def fuse(primary: CancelSignal, secondary: CancelSignal) -> tuple[CancelSignal, Callable[[], None]]:
    """Return ``(relay, dispose)``; ``dispose()`` removes both relay listeners and is idempotent.

    Args:
        primary: The source whose reason wins when both are already cancelled.
        secondary: The other source.
    """
    if primary is secondary:
        return primary, _noop
    controller = CancelController()
    for source in (primary, secondary):
        if source.cancelled:
            controller.cancel(source.reason)
            return controller.signal, _noop

    removers: list[Callable[[], None]] = []

    def dispose() -> None:
        for remove in removers:
            remove()

    def relay(source: CancelSignal) -> None:
        # Dispose first: the relay is one-shot, and the other source must not keep a listener alive.
        dispose()
        controller.cancel(source.reason)

    removers.append(primary.add_listener(relay))
    removers.append(secondary.add_listener(relay))
    return controller.signal, dispose


def _noop() -> None:
    return None
