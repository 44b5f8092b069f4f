"""Spawn observers: a foreground delegation call is told when its child process was spawned, before the handshake.

``observe_spawns(callback)`` installs ``callback`` for the calling task's context while the call starts its run;
``notify_spawned()``, called by the child connection right after a successful spawn (before any request is sent),
invokes it; ``also_observe_spawns`` adds an inner observer (a run's phase clock, its record) in front of it. An
observer that raises is logged and never changes the run. Host-side only: nothing reaches the child, the transcript
or the model.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["also_observe_spawns", "notify_spawned", "observe_spawns"]

logger = logging.getLogger(__name__)

_observer: ContextVar[Callable[[], None] | None] = ContextVar("subagent_host_spawn_observer", default=None)


@contextmanager
def observe_spawns(callback: Callable[[], None] | None) -> Generator[None]:
    """Within the block, a child spawned by this task calls ``callback`` (``None``: no observer, even an outer one)."""
    token = _observer.set(callback)
    try:
        yield
    finally:
        _observer.reset(token)


@contextmanager
def also_observe_spawns(callback: Callable[[], None]) -> Generator[None]:
    """Within the block, a spawn calls ``callback`` first, then the observer already installed (if any)."""
    outer = _observer.get()

    def both() -> None:
        try:
            callback()
        finally:
            if outer is not None:
                outer()

    with observe_spawns(both):
        yield


def notify_spawned() -> None:
    """Tell the current observer, if any, that a child process was spawned; a raising observer is only logged."""
    observer = _observer.get()
    if observer is None:
        return
    try:
        observer()
    except Exception:  # containment boundary: an observer never changes the run
        logger.exception("subagent-host: spawn observer failed")
