"""Correlation of our outgoing requests with the peer's responses.

Each pending request owns a one-shot slot (an outcome and an ``anyio.Event``) that is resolved at most once and is
popped in ``finally`` on every path, so a late or duplicate response is dropped, not leaked, and a cancelled caller
leaves nothing behind. ``fail_all`` wakes every waiter synchronously.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator
from contextlib import contextmanager
from dataclasses import dataclass

import anyio

from host._exceptions import ResponseError
from host.jsonrpc._framing import RequestId

__all__ = ["CLOSED", "Pending", "PendingRequests", "ResponseHook", "Settled"]

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


class PendingRequests:
    """The table of our requests awaiting a response, keyed by request id."""

    __slots__ = ("_entries", "_hooks")

    def __init__(self) -> None:
        self._entries: dict[RequestId, Pending] = {}
        self._hooks: dict[RequestId, ResponseHook] = {}

    def __len__(self) -> int:
        return len(self._entries)

    @contextmanager
    def track(self, request_id: RequestId, on_response: ResponseHook | None = None) -> Generator[Pending]:
        """Register ``request_id`` for the block's duration and yield the slot its outcome arrives in.

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
        try:
            yield pending
        finally:
            # Only our own entry: a resolved one was already popped, and the id may not be reused meanwhile.
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
