"""A per-session queue of runtime notifications, in wire order, with a sticky first failure and a byte bound.

The client's reader pushes synchronously; one consumer receives. Once input ended, queued notifications stay
drainable and then the failure is raised; ``close()`` drops the queue and fails the consumer at once. A bounded
queue counts the memory of each notification it holds while its consumer is busy elsewhere (before the run's
prompt is answered); past the bound it drops everything and fails with ``QueueOverflowError``
(docs/behaviour.md#sdk-client-subscription).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from sys import getsizeof
from typing import Any, Final, cast

import anyio

from host._exceptions import QueueOverflowError, TransportClosedError

__all__ = [
    "SUBSCRIPTION_CLOSED_MESSAGE",
    "NotificationObserver",
    "SessionNotification",
    "SessionRunOutcome",
    "Subscription",
]

SUBSCRIPTION_CLOSED_MESSAGE: Final = "notification subscription closed"
"""``TransportClosedError`` text of a receive on a closed subscription (host-only)."""
QUEUE_OVERFLOW_MESSAGE: Final = "notification queue of session {session_id} passed {limit} bytes before it was consumed"
"""``QueueOverflowError`` text (host-only)."""

FailureFactory = Callable[[], TransportClosedError | QueueOverflowError]


def memory_size(value: object, room: int) -> int | None:
    """The bytes the decoded JSON ``value`` occupies (``sys.getsizeof`` of every object in it, keys included), or
    ``None`` as soon as that passes ``room`` (the walk stops there)."""
    total = 0
    pending = [value]
    while pending:
        item = pending.pop()
        total += getsizeof(item)
        if type(item) is dict:
            mapping = cast(dict[object, object], item)
            pending.extend(mapping.keys())
            pending.extend(mapping.values())
        elif type(item) is list:
            pending.extend(cast(list[object], item))
        if total > room:
            return None
    return total


@dataclass(frozen=True, slots=True)
class SessionNotification:
    """One runtime→host notification routed to a session: ``session.event`` or ``session.status``."""

    method: str
    params: Mapping[str, Any]


NotificationObserver = Callable[[SessionNotification], None]
"""Sees each collected notification of a run, synchronously, in wire order."""


@dataclass(frozen=True, slots=True)
class SessionRunOutcome:
    """What ``run`` returns: the root session id and the last validated ``turn/end`` from the receipt on."""

    session_id: str
    last_turn_end: dict[str, Any] | None = None


class Subscription:
    """The notifications of one session id, until closed or failed.

    Args:
        session_id: the routed ``params.sessionId``.
        on_close: called once by ``close()``.
        max_bytes: the bound on the memory of the notifications queued while no receive waits (``None``: none).
        on_overflow: called once, synchronously, when the bound is passed.
    """

    def __init__(
        self,
        session_id: str,
        on_close: Callable[[Subscription], None],
        *,
        max_bytes: int | None = None,
        on_overflow: Callable[[], None] | None = None,
    ) -> None:
        self.session_id: Final = session_id
        self._on_close = on_close
        self._max_bytes = max_bytes
        self._on_overflow = on_overflow
        # Each item with the bytes it counts against the bound (0 when a receive was waiting for it).
        self._items: deque[tuple[SessionNotification, int]] = deque()
        self._held = 0
        self._receiving = False
        self._overflowed = False
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

    @property
    def overflowed(self) -> bool:
        """Whether the byte bound was passed."""
        return self._overflowed

    def push(self, notification: SessionNotification) -> None:
        """Queue one notification (dropped once closed or failed); past the byte bound, fail with an overflow."""
        if self._closed or self._failure is not None:
            return
        size = 0
        # Pushed while a receive waits: free. The woken consumer runs after the reader's current read, so what one
        # read of the pipe already buffered (its stream's buffer, not the whole flood) can pass uncounted.
        if self._max_bytes is not None and not self._receiving:
            measured = memory_size(notification.params, self._max_bytes - self._held)
            if measured is None:
                self._overflow()
                return
            size = measured
            self._held += size
        self._items.append((notification, size))
        self._wakeup.set()

    def _overflow(self) -> None:
        self._items.clear()
        self._held = 0
        self._overflowed = True
        message = QUEUE_OVERFLOW_MESSAGE.format(session_id=self.session_id, limit=self._max_bytes)
        self._failure = lambda: QueueOverflowError(message)
        self._wakeup.set()
        if self._on_overflow is not None:
            self._on_overflow()

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
        self._held = 0
        self._wakeup.set()
        self._on_close(self)

    async def receive(self) -> SessionNotification:
        """The next notification in wire order.

        Raises:
            TransportClosedError: the subscription was closed, or input ended and the queue is drained.
            QueueOverflowError: the byte bound was passed.
        """
        while True:
            if self._closed:
                raise TransportClosedError(SUBSCRIPTION_CLOSED_MESSAGE)
            if self._items:
                notification, size = self._items.popleft()
                self._held -= size
                return notification
            if self._failure is not None:
                raise self._failure()
            self._wakeup = anyio.Event()
            self._receiving = True
            try:
                await self._wakeup.wait()
            finally:
                self._receiving = False
