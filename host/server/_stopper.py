"""How ``serve`` stops: one ``Stopper`` whose registered stops run once, in order, when a signal or EOF fires."""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Stopper"]


class Stopper:
    """Runs every registered stop once, when ``stop()`` is first called (a stop registered later runs at once)."""

    def __init__(self) -> None:
        self.stopping = False
        self._stops: list[Callable[[], None]] = []

    def on_stop(self, stop: Callable[[], None]) -> None:
        """Run ``stop`` when the server stops (at once when it already is stopping)."""
        self._stops.append(stop)
        if self.stopping:
            stop()

    def stop(self) -> None:
        """Start the shutdown. Idempotent."""
        if self.stopping:
            return
        self.stopping = True
        for stop in self._stops:
            stop()
