"""A per-session queue of runtime notifications, in wire order, with a sticky first failure.

The client's reader pushes synchronously; one consumer receives. Once input ended, queued notifications stay
drainable and then the failure is raised; ``close()`` drops the queue and fails the consumer at once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import anyio

from host._exceptions import TransportClosedError

__all__ = [
    "SUBSCRIPTION_CLOSED_MESSAGE",
    "NotificationObserver",
    "SessionNotification",
    "SessionRunOutcome",
    "Subscription",
]

SUBSCRIPTION_CLOSED_MESSAGE: Final = "notification subscription closed"
"""``TransportClosedError`` text of a receive on a closed subscription (host-only)."""

FailureFactory = Callable[[], TransportClosedError]


@dataclass(frozen=True, slots=True)
class SessionNotification:
    """One runtime→host notification routed to a session: ``session.event`` or ``session.status``."""

    method: str
    params: Mapping[str, Any]


NotificationObserver = Callable[[SessionNotification], None]
"""Sees each collected notification of a run, synchronously, in wire order."""


@dataclass(frozen=True, slots=True)
class SessionRunOutcome:
    """What ``run`` returns: the root session id and its validated events from the receipt on."""

    session_id: str
    events: tuple[dict[str, Any], ...]


class Subscription:
    """The notifications of one session id, until closed or failed."""

    def __init__(self, session_id: str, on_close: Callable[[Subscription], None]) -> None:
        self.session_id: Final = session_id
        self._on_close = on_close
        self._items: deque[SessionNotification] = deque()
        self._wakeup = anyio.Event()
        self._failure: FailureFactory | None = None
        self._closed = False

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
        return self._closed

    @property
    def failure(self) -> FailureFactory | None:
        """Builds the sticky failure once input ended (``None`` before); each call describes the current facts."""
        return self._failure

    def push(self, notification: SessionNotification) -> None:
        """Queue one notification (dropped once closed or failed)."""
        if self._closed or self._failure is not None:
            return
        self._items.append(notification)
        self._wakeup.set()

    def fail(self, failure: FailureFactory) -> None:
        """Make the first failure sticky: queued items drain first, then ``failure()`` is raised."""
        if self._failure is None:
            self._failure = failure
            self._wakeup.set()

    def close(self) -> None:
        """Drop the queue and fail the consumer with ``notification subscription closed``. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._items.clear()
        self._wakeup.set()
        self._on_close(self)

    async def receive(self) -> SessionNotification:
        """The next notification in wire order.

        Raises:
            TransportClosedError: the subscription was closed, or input ended and the queue is drained.
        """
        while True:
            if self._closed:
                raise TransportClosedError(SUBSCRIPTION_CLOSED_MESSAGE)
            if self._items:
                return self._items.popleft()
            if self._failure is not None:
                raise self._failure()
            self._wakeup = anyio.Event()
            await self._wakeup.wait()
