"""The Streamable HTTP endpoint (``/mcp``) over ``host.mcp``, for both protocol eras.

The era is the ``MCP-Protocol-Version`` header's, as the MCP SDK's server routes: a value that is not a handshake
version (2026-07-28, or one not served) goes to the stateless ladder, as does a body carrying the 2026-07-28 envelope.

- **2026-07-28**: each ``POST`` of a request stands alone (no session). The ladder, first failure wins: the envelope
  keys (``-32602``), the routing headers (``-32020``, ``_http_ladder.header_mismatch``), the version (``-32022``).
  ``GET`` and ``DELETE`` are 405. A notification is acknowledged (202) and dropped: at this revision closing the
  response stream is the cancellation, and honouring a posted cancel by request id would let one anonymous caller
  cancel another's call.
- **Handshake era**: ``initialize`` opens a session named by the ``Mcp-Session-Id`` response header, which every
  later message carries (missing: 400, unknown or ended: 404); ``GET`` opens the session's stream for notices no
  request carries (job completion), ``DELETE`` ends the session.

A ``tools/call`` is answered as an SSE stream (its progress notifications, then its response); every other request
as one JSON response. Calls run in the server's task group, not the HTTP request's, so a dropped connection cancels
a call only at 2026-07-28 (where the stream is the request); a session's ``notifications/cancelled`` cancels it and
it is then answered nothing.
"""

from __future__ import annotations

import json
import logging
import math
import secrets
from collections import OrderedDict
from collections.abc import AsyncGenerator, Hashable
from typing import Any, Final, cast

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from host._text import encode_json
from host.jsonrpc import RequestId
from host.mcp import (
    CLIENT_CAPABILITIES_META_KEY,
    HANDSHAKE_VERSIONS,
    MODERN_VERSION,
    PROTOCOL_VERSION_META_KEY,
    Connection,
    McpError,
    McpServer,
    check_envelope,
    has_modern_envelope,
)
from host.server._http_ladder import (
    VERSION_HEADER,
    accepts,
    bounded_body,
    error_response,
    header_mismatch,
    json_response,
    refusal,
    unsupported_version,
)

__all__ = ["SESSION_HEADER", "McpEndpoint"]

logger = logging.getLogger(__name__)

SESSION_HEADER: Final = "mcp-session-id"
_MAX_SESSIONS: Final = 1000
"""Handshake-era sessions kept at once; beyond it the least recently used one is dropped."""
_HTTP_STATUS: Final = {-32700: 400, -32600: 400, -32602: 400, -32020: 400, -32021: 400, -32022: 400, -32601: 404}
"""2026-07-28: the HTTP status of a JSON-RPC error code (unlisted: 200), as the SDK's table maps it."""
_MISSING_SESSION: Final = "Bad Request: Missing session ID"
_UNKNOWN_SESSION: Final = "Session not found"
_NOT_ACCEPTABLE_POST: Final = "Not Acceptable: Client must accept both application/json and text/event-stream"
_NOT_ACCEPTABLE_GET: Final = "Not Acceptable: Client must accept text/event-stream"
_TOO_LARGE: Final = "Request body too large"
_NOT_ALLOWED: Final = "Method Not Allowed"


class _Session:
    """One handshake-era session: its connection, its calls in flight and its standalone notice stream."""

    def __init__(self) -> None:
        self.connection = Connection(self._notify, era="handshake")
        self.calls: dict[Hashable, anyio.CancelScope] = {}
        self.stream: MemoryObjectSendStream[dict[str, Any]] | None = None

    async def _notify(self, method: str, params: dict[str, Any]) -> None:
        if self.stream is not None:
            self.stream.send_nowait({"jsonrpc": "2.0", "method": method, "params": params})

    def close(self) -> None:
        self.connection.closed = True
        for scope in self.calls.values():
            scope.cancel()
        if self.stream is not None:
            self.stream.close()


def _sse(message: dict[str, Any]) -> bytes:
    return b"event: message\ndata: " + encode_json(message) + b"\n\n"


class McpEndpoint:
    """The ``/mcp`` endpoint, an ASGI app for every HTTP method: sessions, stateless requests and their calls."""

    def __init__(self, server: McpServer, calls: TaskGroup) -> None:
        self._server = server
        self._calls = calls
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._modern_calls: dict[Hashable, anyio.CancelScope] = {}

    def close(self) -> None:
        """Cancel every call in flight and end every session (shutdown)."""
        for scope in self._modern_calls.values():
            scope.cancel()
        for session in self._sessions.values():
            session.close()
        self._sessions.clear()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        response = await self.handle(request)
        await response(scope, receive, send)

    async def handle(self, request: Request) -> Response:
        """Answer one HTTP request to ``/mcp``."""
        version = request.headers.get(VERSION_HEADER)
        modern = version is not None and version not in HANDSHAKE_VERSIONS
        if request.method == "POST":
            return await self._post(request, modern)
        if request.method in ("GET", "DELETE") and modern:
            return refusal(405, _NOT_ALLOWED, {"Allow": "POST"})
        if request.method == "GET":
            return self._get(request)
        if request.method == "DELETE":
            session = self._session_of(request)
            if isinstance(session, Response):
                return session
            del self._sessions[request.headers[SESSION_HEADER]]
            session.close()
            return Response(status_code=200)
        return refusal(405, _NOT_ALLOWED, {"Allow": "GET, POST, DELETE"})

    def _session_of(self, request: Request) -> _Session | Response:
        session_id = request.headers.get(SESSION_HEADER)
        if not session_id:
            return refusal(400, _MISSING_SESSION)
        session = self._sessions.get(session_id)
        if session is None:
            return refusal(404, _UNKNOWN_SESSION)
        self._sessions.move_to_end(session_id)
        return session

    def _get(self, request: Request) -> Response:
        if not accepts(request)[1]:
            return refusal(406, _NOT_ACCEPTABLE_GET)
        session = self._session_of(request)
        if isinstance(session, Response):
            return session
        if session.stream is not None:
            return refusal(409, "Conflict: Only one SSE stream is allowed per session")
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
        session.stream = send
        return StreamingResponse(_events(receive), media_type="text/event-stream", headers=_NO_CACHE)

    async def _post(self, request: Request, modern_header: bool) -> Response:
        if accepts(request) != (True, True):
            return refusal(406, _NOT_ACCEPTABLE_POST)
        body = await bounded_body(request)
        if body is None:
            return refusal(413, _TOO_LARGE)
        try:
            message = json.loads(body, parse_constant=_reject_constant)
        except (ValueError, RecursionError):
            return error_response(None, -32700, "Parse error", 400)
        if not isinstance(message, dict) or cast("dict[str, Any]", message).get("jsonrpc") != "2.0":
            return error_response(None, -32600, "Invalid Request", 400)
        envelope = cast("dict[str, Any]", message)
        method = envelope.get("method")
        params = envelope.get("params", {})
        request_id = envelope.get("id")
        is_response = "method" not in envelope and ("result" in envelope or "error" in envelope)
        if is_response and not modern_header:
            session = self._session_of(request)
            return session if isinstance(session, Response) else Response(status_code=202)
        if not isinstance(method, str) or not isinstance(params, dict) or ("id" in envelope and not _is_id(request_id)):
            return error_response(request_id if _is_id(request_id) else None, -32600, "Invalid Request", 400)
        params = cast("dict[str, Any]", params)
        if modern_header or (method != "initialize" and has_modern_envelope(params)):
            if "id" not in envelope:
                version = request.headers.get(VERSION_HEADER)
                if version is not None and version != MODERN_VERSION:
                    return _modern_error(None, unsupported_version(version))
                return Response(status_code=202)
            return await self._modern(request, cast("RequestId", request_id), method, params)
        if "id" not in envelope:
            session = self._session_of(request)
            if isinstance(session, Response):
                return session
            self._notification(session, method, params)
            return Response(status_code=202)
        request_id = cast("RequestId", request_id)
        if method == "initialize" and SESSION_HEADER not in request.headers:
            session = _Session()
            session_id = secrets.token_hex(16)
            self._sessions[session_id] = session
            while len(self._sessions) > _MAX_SESSIONS:
                self._sessions.popitem(last=False)[1].close()
            response = await self._answer(session.connection, session.calls, request_id, method, params)
            if response.status_code == 200 and session.connection.initialized:
                response.headers[SESSION_HEADER] = session_id
            else:
                self._sessions.pop(session_id, None)
            return response
        session = self._session_of(request)
        if isinstance(session, Response):
            return session
        return await self._answer(session.connection, session.calls, request_id, method, params)

    async def _modern(self, request: Request, request_id: RequestId, method: str, params: dict[str, Any]) -> Response:
        meta = params.get("_meta")
        try:
            if not (
                isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta and CLIENT_CAPABILITIES_META_KEY in meta
            ):
                check_envelope(params)  # raises the -32602 that names what is missing
            mismatch = header_mismatch(request, method, params)
            if mismatch is not None:
                raise mismatch
        except McpError as exc:
            return _modern_error(request_id, exc)
        return await self._answer(Connection(era="modern"), self._modern_calls, request_id, method, params, modern=True)

    def _notification(self, session: _Session, method: str, params: dict[str, Any]) -> None:
        calls = session.calls

        def cancel(request_id: RequestId) -> None:
            scope = calls.pop(request_id, None)
            if scope is not None:
                scope.cancel()

        self._server.notification(session.connection, method, params, cancel)

    async def _answer(
        self,
        connection: Connection,
        calls: dict[Hashable, anyio.CancelScope],
        request_id: RequestId,
        method: str,
        params: dict[str, Any],
        *,
        modern: bool = False,
    ) -> Response:
        if method != "tools/call":
            try:
                result = await self._server.request(connection, method, params, _no_notify)
            except McpError as exc:
                if modern:
                    return _modern_error(request_id, exc)
                return error_response(request_id, exc.code, exc.message, 200, exc.data)
            return json_response({"jsonrpc": "2.0", "id": request_id, "result": result})
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
        scope = anyio.CancelScope()
        # A session's calls are keyed by request id (its notifications/cancelled names one); a stateless call by a
        # key of its own, so concurrent clients reusing an id never reach each other's calls.
        key: Hashable = object() if modern else request_id
        calls[key] = scope
        self._calls.start_soon(self._call, connection, calls, key, request_id, params, scope, send)
        return StreamingResponse(
            _events(receive, scope if modern else None), media_type="text/event-stream", headers=_NO_CACHE
        )

    async def _call(
        self,
        connection: Connection,
        calls: dict[Hashable, anyio.CancelScope],
        key: Hashable,
        request_id: RequestId,
        params: dict[str, Any],
        scope: anyio.CancelScope,
        send: MemoryObjectSendStream[dict[str, Any]],
    ) -> None:
        async def notify(method: str, notice: dict[str, Any]) -> None:
            send.send_nowait({"jsonrpc": "2.0", "method": method, "params": notice})

        with send:
            response: dict[str, Any] | None = None
            with scope:
                try:
                    result = await self._server.request(connection, "tools/call", params, notify)
                    response = {"jsonrpc": "2.0", "id": request_id, "result": result}
                except McpError as exc:
                    response = {"jsonrpc": "2.0", "id": request_id, "error": exc.to_wire()}
            if calls.get(key) is scope:
                del calls[key]
            if response is not None and not scope.cancel_called:
                send.send_nowait(response)


def _modern_error(request_id: RequestId | None, exc: McpError) -> Response:
    return error_response(request_id, exc.code, exc.message, _HTTP_STATUS.get(exc.code, 200), exc.data)


_NO_CACHE: Final = {"Cache-Control": "no-cache, no-transform", "X-Accel-Buffering": "no"}


async def _events(
    receive: MemoryObjectReceiveStream[dict[str, Any]], cancel_on_drop: anyio.CancelScope | None = None
) -> AsyncGenerator[bytes]:
    """The SSE body; a client that drops a 2026-07-28 call's stream cancels the call."""
    finished = False
    try:
        with receive:
            async for message in receive:
                yield _sse(message)
        finished = True
    finally:
        if not finished and cancel_on_drop is not None:
            cancel_on_drop.cancel()


async def _no_notify(method: str, params: dict[str, Any]) -> None:
    del method, params


def _is_id(value: object) -> bool:
    return type(value) is int or type(value) is str


def _reject_constant(name: str) -> object:
    raise ValueError(f"non-standard JSON constant {name}")
