"""Correlation of our outgoing requests with the peer's responses.

Each pending request owns a buffer-1 memory stream that is resolved at most once with ``send_nowait`` and is popped
in ``finally`` on every path, so a late or duplicate response is dropped, not leaked, and a cancelled caller leaves
nothing behind. ``fail_all`` wakes every waiter synchronously.
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from host._exceptions import ResponseError
from host.jsonrpc._framing import RequestId

__all__ = ["CLOSED", "PendingRequests", "Settled"]


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


class PendingRequests:
    """The table of our requests awaiting a response, keyed by request id."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[RequestId, MemoryObjectSendStream[Settled]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    @contextmanager
    def track(self, request_id: RequestId) -> Generator[MemoryObjectReceiveStream[Settled]]:
        """Register ``request_id`` for the block's duration and yield the stream its outcome arrives on.

        Raises:
            RuntimeError: the id is already pending (the id allocator repeated itself).
        """
        if request_id in self._entries:
            raise RuntimeError(f"request id {request_id!r} is already pending")
        send, receive = anyio.create_memory_object_stream[Settled](1)
        with send, receive:
            self._entries[request_id] = send
            try:
                yield receive
            finally:
                # Only our own entry: a resolved one was already popped, and the id may not be reused meanwhile.
                if self._entries.get(request_id) is send:
                    del self._entries[request_id]

    def resolve(self, request_id: RequestId, outcome: Settled) -> bool:
        """Deliver ``outcome`` to the request ``request_id``; ``False`` when no such request is pending."""
        send = self._entries.pop(request_id, None)
        if send is None:
            return False
        _deliver(send, outcome)
        return True

    def fail_all(self, outcome: Settled) -> None:
        """Deliver ``outcome`` to every pending request and forget them all."""
        entries = list(self._entries.values())
        self._entries.clear()
        for send in entries:
            _deliver(send, outcome)


def _deliver(send: MemoryObjectSendStream[Settled], outcome: Settled) -> None:
    try:
        send.send_nowait(outcome)
    except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
        # Unreachable while the table is consistent (an entry is popped when resolved, its streams closed only
        # after removal); dropping beats crashing the reader.
        pass
