"""Correlation of our outgoing requests with the peer's responses.

Each pending request owns a one-shot slot (an outcome and an ``anyio.Event``) that is resolved at most once and is
popped in ``finally`` on every path, so a late or duplicate response is dropped, not leaked, and a cancelled caller
leaves nothing behind. ``fail_all`` wakes every waiter synchronously.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import anyio

from host._exceptions import ResponseError
from host.jsonrpc._framing import RequestId

__all__ = ["CLOSED", "Outstanding", "Pending", "PendingRequests", "ResponseHook", "Settled"]

logger = logging.getLogger(__name__)

ResponseHook = Callable[[object], None]
"""Called synchronously by the reader with a response's ``result`` (or its ``ResponseError``) before the waiter
wakes and before the next line is read: what a caller must fix at the instant its response is processed."""


@dataclass(frozen=True, slots=True)
class Settled:
    """How a pending request ended: a result, the peer's error, or the connection closing."""

    result: object = None
    """The response's ``result`` (``None`` when absent)."""
    error: ResponseError | None = None
    """The peer's ``error`` member, mapped."""
    closed: bool = False
    """The connection closed before a response arrived."""


CLOSED: Settled = Settled(closed=True)
"""The outcome every waiter receives when the connection closes."""


class Pending:
    """One request's one-shot outcome slot: filled once, then its waiter wakes."""

    __slots__ = ("_event", "_outcome")

    def __init__(self) -> None:
        self._event = anyio.Event()
        self._outcome: Settled | None = None

    @property
    def settled(self) -> bool:
        """Whether the outcome arrived."""
        return self._outcome is not None

    async def receive(self) -> Settled:
        """Wait for the outcome (a cancellation point like any anyio wait)."""
        await self._event.wait()
        assert self._outcome is not None
        return self._outcome

    def deliver(self, outcome: Settled) -> None:
        """Fill the slot and wake the waiter; only the first outcome counts (the table pops before delivering)."""
        if self._outcome is None:
            self._outcome = outcome
            self._event.set()


class Outstanding:
    """A written request: it stays pending until answered or the connection ends (or ``forget``), whether or not
    anyone waits for it, so a cancelled wait never loses the answer."""

    __slots__ = ("_closed_error", "_pending", "_request_id", "_table")

    def __init__(
        self, table: PendingRequests, request_id: RequestId, pending: Pending, closed_error: Callable[[], Exception]
    ) -> None:
        self._table = table
        self._request_id = request_id
        self._pending = pending
        self._closed_error = closed_error

    @property
    def settled(self) -> bool:
        """Whether the answer (or the connection's end) arrived."""
        return self._pending.settled

    async def result(self) -> object:
        """Wait for the answer's ``result`` (``None`` when absent); a cancellation point.

        Raises:
            ResponseError: the peer answered with an ``error`` member.
            ConnectionClosedError: the connection ended before the answer.
        """
        outcome = await self._pending.receive()
        if outcome.error is not None:
            raise outcome.error
        if outcome.closed:
            raise self._closed_error()
        return outcome.result

    def forget(self) -> None:
        """Stop waiting for the answer: a late one is dropped. Idempotent."""
        self._table.forget(self._request_id, self._pending)


class PendingRequests:
    """The table of our requests awaiting a response, keyed by request id."""

    __slots__ = ("_entries", "_hooks")

    def __init__(self) -> None:
        self._entries: dict[RequestId, Pending] = {}
        self._hooks: dict[RequestId, ResponseHook] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def register(
        self, request_id: RequestId, on_response: ResponseHook | None, closed_error: Callable[[], Exception]
    ) -> Outstanding:
        """Register ``request_id`` until its outcome arrives (``resolve``, ``fail_all``) or it is forgotten.

        ``on_response``, if given, runs inside :meth:`resolve` (never for a closed connection).

        Raises:
            RuntimeError: the id is already pending (the id allocator repeated itself).
        """
        if request_id in self._entries:
            raise RuntimeError(f"request id {request_id!r} is already pending")
        pending = Pending()
        self._entries[request_id] = pending
        if on_response is not None:
            self._hooks[request_id] = on_response
        return Outstanding(self, request_id, pending, closed_error)

    def forget(self, request_id: RequestId, pending: Pending) -> None:
        """Drop ``pending`` if it is still registered under ``request_id`` (a resolved one was popped already)."""
        # Only our own entry: the id may not be reused meanwhile.
        if self._entries.get(request_id) is pending:
            del self._entries[request_id]
            self._hooks.pop(request_id, None)

    def resolve(self, request_id: RequestId, outcome: Settled) -> bool:
        """Deliver ``outcome`` to the request ``request_id``; ``False`` when no such request is pending."""
        pending = self._entries.pop(request_id, None)
        if pending is None:
            return False
        hook = self._hooks.pop(request_id, None)
        if hook is not None:
            try:
                hook(outcome.error if outcome.error is not None else outcome.result)
            except Exception:  # containment boundary: a caller's hook must not stop the reader
                logger.exception("JSON-RPC response hook failed for request %.80r", request_id)
        pending.deliver(outcome)
        return True

    def fail_all(self, outcome: Settled) -> None:
        """Deliver ``outcome`` to every pending request and forget them all."""
        entries = list(self._entries.values())
        self._entries.clear()
        self._hooks.clear()
        for pending in entries:
            pending.deliver(outcome)
