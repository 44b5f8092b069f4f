"""Inbound requests handled each in a task of its own, cancellable by id, for a peer that serves long requests.

A cancelled request is never answered: its handler is cancelled (and may settle its work before it returns), and
whatever it returns is dropped. Requests run in the task group that ``running`` opens around the reader, so the
peer's ``run()`` returns only once every one of them has finished.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager

import anyio
from anyio.abc import TaskGroup

from host.jsonrpc._framing import RequestId

__all__ = ["InboundRequests"]

Respond = Callable[[RequestId, str, object], Awaitable[bytes]]
WriteReply = Callable[[str, bytes], Awaitable[None]]


class InboundRequests:
    """The concurrent inbound requests in flight, by id, each under its own cancel scope."""

    def __init__(self, respond: Respond, write_reply: WriteReply) -> None:
        self._respond = respond
        self._write_reply = write_reply
        self._group: TaskGroup | None = None
        self._scopes: dict[RequestId, anyio.CancelScope] = {}

    @asynccontextmanager
    async def running(self, *, enabled: bool) -> AsyncGenerator[None]:
        """Own the requests' task group for the block; on exit wait until every request has finished."""
        if not enabled:
            yield
            return
        async with anyio.create_task_group() as group:
            self._group = group
            yield

    def start(self, request_id: RequestId, method: str, params: object) -> None:
        """Handle one request in its own task (a repeated id in flight replaces the older one's cancel handle)."""
        assert self._group is not None, "concurrent requests need running(enabled=True)"
        scope = anyio.CancelScope()
        self._scopes[request_id] = scope
        self._group.start_soon(self._handle, request_id, method, params, scope, name=f"jsonrpc request {method}")

    def cancel(self, request_id: RequestId) -> bool:
        """Cancel the request ``request_id``; ``False`` when none is in flight."""
        scope = self._scopes.pop(request_id, None)
        if scope is None:
            return False
        scope.cancel()
        return True

    def cancel_all(self) -> None:
        """Cancel every request in flight."""
        scopes = list(self._scopes.values())
        self._scopes.clear()
        for scope in scopes:
            scope.cancel()

    async def _handle(self, request_id: RequestId, method: str, params: object, scope: anyio.CancelScope) -> None:
        data: bytes | None = None
        with scope:
            data = await self._respond(request_id, method, params)
        if self._scopes.get(request_id) is scope:
            del self._scopes[request_id]
        if scope.cancel_called or data is None:
            return
        await self._write_reply(method, data)
