"""The Streamable HTTP endpoint (``POST``/``GET``/``DELETE /mcp``) over ``host.mcp``, for both protocol eras.

- **2026-07-28**: each ``POST`` of an enveloped request is a connection of its own (stateless, no session); its
  ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` headers must agree with the body (else ``-32001``).
- **Handshake era**: ``initialize`` opens a session named by the ``Mcp-Session-Id`` response header, which every
  later request carries (missing: 400, unknown: 404); ``GET`` opens the session's stream for notices no request
  carries (job completion), ``DELETE`` ends the session.

A ``tools/call`` is answered as an SSE stream (its progress notifications, then its response); every other request
as one JSON response. Calls run in the server's task group, not the HTTP request's, so a dropped connection cancels
a call only at 2026-07-28 (where the stream is the request); ``notifications/cancelled`` cancels it in either era
and it is then answered nothing.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import math
import secrets
from collections import OrderedDict
from collections.abc import AsyncGenerator
from typing import Any, Final, cast

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from host.jsonrpc import MAX_LINE_BYTES, RequestId
from host.mcp import Connection, McpError, McpServer, has_modern_envelope

__all__ = ["SESSION_HEADER", "McpEndpoint"]

logger = logging.getLogger(__name__)

SESSION_HEADER: Final = "mcp-session-id"
_MAX_SESSIONS: Final = 1000
"""Handshake-era sessions kept at once; beyond it the least recently used one is dropped."""
_HEADER_MISMATCH: Final = -32001
_HTTP_STATUS: Final = {-32700: 400, -32600: 400, -32602: 400, -32001: 400, -32022: 400, -32601: 404}
_JSON: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


class _Session:
    """One handshake-era session: its connection, its calls in flight and its standalone notice stream."""

    def __init__(self) -> None:
        self.connection = Connection(self._notify, era="handshake")
        self.calls: dict[RequestId, anyio.CancelScope] = {}
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


def _error(request_id: object, code: int, message: str, status: int = 200, data: Any = None) -> Response:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": error}, status_code=status)


def _sse(message: dict[str, Any]) -> bytes:
    return f"event: message\ndata: {_JSON.encode(message)}\n\n".encode()


class McpEndpoint:
    """The ``/mcp`` endpoint: sessions, stateless requests and the calls they run in ``calls``."""

    def __init__(self, server: McpServer, calls: TaskGroup) -> None:
        self._server = server
        self._calls = calls
        self._sessions: OrderedDict[str, _Session] = OrderedDict()
        self._modern_calls: dict[RequestId, anyio.CancelScope] = {}

    def close(self) -> None:
        """Cancel every call in flight and end every session (shutdown)."""
        for scope in self._modern_calls.values():
            scope.cancel()
        for session in self._sessions.values():
            session.close()
        self._sessions.clear()

    async def handle(self, request: Request) -> Response:
        """Answer one HTTP request to ``/mcp``."""
        if request.method == "POST":
            return await self._post(request)
        if request.method == "GET":
            return self._get(request)
        if request.method == "DELETE":
            session_id = request.headers.get(SESSION_HEADER)
            session = self._sessions.pop(session_id, None) if session_id else None
            if session is None:
                return Response("Session not found", status_code=404)
            session.close()
            return Response(status_code=200)
        return Response("Method Not Allowed", status_code=405)

    def _session_of(self, request: Request) -> _Session | Response:
        session_id = request.headers.get(SESSION_HEADER)
        if not session_id:
            return Response("Bad Request: Missing session ID", status_code=400)
        session = self._sessions.get(session_id)
        if session is None:
            return Response("Session not found", status_code=404)
        self._sessions.move_to_end(session_id)
        return session

    def _get(self, request: Request) -> Response:
        session = self._session_of(request)
        if isinstance(session, Response):
            return Response("Method Not Allowed", status_code=405) if SESSION_HEADER not in request.headers else session
        if session.stream is not None:
            return Response("Conflict: Only one SSE stream is allowed per session", status_code=409)
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
        session.stream = send
        return StreamingResponse(_events(receive), media_type="text/event-stream", headers=_NO_CACHE)

    async def _post(self, request: Request) -> Response:
        body = await request.body()
        if len(body) > MAX_LINE_BYTES:
            return Response("Request body too large", status_code=413)
        try:
            message = json.loads(body, parse_constant=_reject_constant)
        except (ValueError, RecursionError):
            return _error(None, -32700, "Parse error", 400)
        if not isinstance(message, dict) or cast("dict[str, Any]", message).get("jsonrpc") != "2.0":
            return _error(None, -32600, "Invalid Request", 400)
        envelope = cast("dict[str, Any]", message)
        method = envelope.get("method")
        params = envelope.get("params", {})
        request_id = envelope.get("id")
        if not isinstance(method, str) or not isinstance(params, dict):
            if "method" not in envelope and ("result" in envelope or "error" in envelope):
                return Response(status_code=202)
            return _error(request_id if _is_id(request_id) else None, -32600, "Invalid Request", 400)
        params = cast("dict[str, Any]", params)
        modern = method != "initialize" and has_modern_envelope(params)
        if "id" not in envelope:
            self._notification(request, method, params, modern)
            return Response(status_code=202)
        if not _is_id(request_id):
            return _error(None, -32600, "Invalid Request", 400)
        request_id = cast("RequestId", request_id)
        if modern:
            mismatch = _header_mismatch(request, method, params)
            if mismatch is not None:
                return _error(request_id, _HEADER_MISMATCH, mismatch, 400)
            connection = Connection(era="modern")
            return await self._answer(connection, self._modern_calls, request_id, method, params, modern=True)
        if method == "initialize":
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

    def _notification(self, request: Request, method: str, params: dict[str, Any], modern: bool) -> None:
        if modern or SESSION_HEADER not in request.headers:
            calls = self._modern_calls
            connection = Connection(era="modern")
        else:
            session = self._session_of(request)
            if isinstance(session, Response):
                return
            calls, connection = session.calls, session.connection

        def cancel(request_id: RequestId) -> None:
            scope = calls.pop(request_id, None)
            if scope is not None:
                scope.cancel()

        self._server.notification(connection, method, params, cancel)

    async def _answer(
        self,
        connection: Connection,
        calls: dict[RequestId, anyio.CancelScope],
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
                return _error(
                    request_id, exc.code, exc.message, _HTTP_STATUS.get(exc.code, 200) if modern else 200, exc.data
                )
            return JSONResponse({"jsonrpc": "2.0", "id": request_id, "result": result})
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](math.inf)
        scope = anyio.CancelScope()
        calls[request_id] = scope
        self._calls.start_soon(self._call, connection, calls, request_id, params, scope, send)
        return StreamingResponse(
            _events(receive, scope if modern else None), media_type="text/event-stream", headers=_NO_CACHE
        )

    async def _call(
        self,
        connection: Connection,
        calls: dict[RequestId, anyio.CancelScope],
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
            if calls.get(request_id) is scope:
                del calls[request_id]
            if response is not None and not scope.cancel_called:
                send.send_nowait(response)


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


def _header_mismatch(request: Request, method: str, params: dict[str, Any]) -> str | None:
    """The 2026-07-28 header rung: the routing headers must repeat what the body says."""
    meta = cast("dict[str, Any]", params.get("_meta"))
    version = meta.get("io.modelcontextprotocol/protocolVersion")
    header = request.headers.get("mcp-protocol-version")
    if header is None or header != version:
        return "mcp-protocol-version header does not match the request envelope's protocol version"
    if request.headers.get("mcp-method") != method:
        return "mcp-method header does not match the request body's method"
    name = params.get("name")
    if method == "tools/call" and name is not None and _decoded(request.headers.get("mcp-name")) != name:
        return "mcp-name header does not match the request body's 'name' parameter"
    return None


def _decoded(value: str | None) -> str | None:
    """A header value, with the ``=?base64?...?=`` form clients use for values that are not plain ASCII decoded."""
    if value is None or not (value.startswith("=?base64?") and value.endswith("?=")):
        return value
    try:
        return base64.b64decode(value[9:-2], validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
