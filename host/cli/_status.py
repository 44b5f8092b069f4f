"""The one-line status on a stderr terminal: provider, state (starting, handshake, running, tearing down), elapsed.

Quiet when stderr is not a terminal. The state comes from what the CLI observes: ``starting`` until the child is
spawned (``RunHooks.on_spawn``), ``handshake`` until the run is published, ``running`` from its first frame,
``tearing down`` once its result settled.
"""

from __future__ import annotations

import time
from typing import Final

import anyio

from host.cli._output import Output

__all__ = ["StatusLine"]

_TICK_S: Final = 0.5


class StatusLine:
    """Redraws ``subagent-host: <provider> <state> <elapsed>s`` while a run is live."""

    def __init__(self, output: Output, provider: str) -> None:
        """Start in ``starting``; nothing is drawn until ``tick`` runs."""
        self._output = output
        self._provider = provider
        self._state = "starting"
        self._started = time.monotonic()
        self._done = False

    def set_state(self, state: str) -> None:
        """Move to ``state`` (redrawn at once)."""
        if self._state != state and not self._done:
            self._state = state
            self._draw()

    def clear(self) -> None:
        """Remove the line for good."""
        self._done = True
        self._output.status(None)

    async def tick(self) -> None:
        """Redraw the elapsed time until cancelled (a no-op when stderr is not a terminal)."""
        if not self._output.stderr_tty:
            return
        while not self._done:
            self._draw()
            await anyio.sleep(_TICK_S)

    def _draw(self) -> None:
        if self._done:
            return
        elapsed = time.monotonic() - self._started
        self._output.status(f"subagent-host: {self._provider} {self._state} {elapsed:.1f}s")
