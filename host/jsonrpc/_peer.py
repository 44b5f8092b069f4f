"""The bidirectional newline-delimited JSON-RPC 2.0 peer, deliberately not ACP- or SDK-aware.

One reader handles every inbound message inline, in arrival order; writes are serialised, one ``send()`` per
message. Peer input never raises out of ``run()``: garbage is skipped (or, with ``strict``, answered ``-32700`` /
``-32600``), and EOF, an over-long line or ``close()`` ends the connection, failing every pending request with
``ConnectionClosedError``. Each inbound request is answered at most once (exactly once unless the connection closes
while its handler runs, or the request was cancelled). A server whose requests may take long names them in
``concurrent_methods``: each such request runs in its own task, which ``cancel_request`` cancels without a response.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Literal, TypeAlias, cast

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream
from anyio.streams.buffered import BufferedByteReceiveStream

from host._exceptions import ConnectionClosedError, LineTooLongError, PeerWriteError
from host.jsonrpc._envelope import (
    ErrorReply,
    Rejection,
    error_response,
    handler_failure_to_wire,
    outbound_message,
    reject_line,
    reject_message,
    response_error,
)
from host.jsonrpc._framing import MAX_LINE_BYTES, NonJsonLines, RequestId, encode_message, parse_line
from host.jsonrpc._inbound import InboundRequests
from host.jsonrpc._pending import CLOSED, Outstanding, PendingRequests, ResponseHook, Settled

__all__ = ["CloseReason", "JsonRpcPeer", "RequestHandler", "RequestRouter"]

logger = logging.getLogger(__name__)

RequestHandler: TypeAlias = Callable[[dict[str, Any]], Awaitable[object]]
"""Answers one inbound request: ``params`` in, a JSON-able ``result`` out."""

RequestRouter: TypeAlias = Callable[[str], RequestHandler | None]
"""Finds the handler of an inbound method (``None``: ``-32601``), for a server whose methods depend on its state."""

CloseReason: TypeAlias = Literal["eof", "line-too-long", "closed"]

METHOD_NOT_FOUND_CODE: Final = -32601
# The SDK's texts for a connection that ended (docs/behaviour.md#sdk-client-errors): by the peer, or by us.
INPUT_CLOSED_MESSAGE: Final = "JSON-RPC input closed"
TRANSPORT_CLOSED_MESSAGE: Final = "JSON-RPC transport closed"

# Bounds closing our end of the receive stream once the reader is done with it.
_RECEIVE_CLOSE_TIMEOUT: Final = 1.0


def _default_method_not_found(method: str) -> str:
    return "Method not found"


class JsonRpcPeer:
    """One JSON-RPC 2.0 connection over a pair of byte streams, in both directions.

    Args:
        send: where our messages go (the child's stdin).
        receive: where the peer's messages come from (the child's stdout).
        request_handlers: inbound methods we answer, by name; any other gets ``-32601``.
        on_notification: sees every inbound notification, synchronously and inline; its exceptions are logged.
        next_id: allocates our request ids (default ``0, 1, 2, ...``).
        method_not_found: the ``-32601`` message for an unknown inbound method.
        max_line_bytes: the longest inbound line (without ``\\n``); a longer one closes the connection.
        request_router: finds inbound handlers by method when ``request_handlers`` has none.
        concurrent_methods: inbound methods each handled in a task of their own (answered when done, in any order);
            every other request is answered inline, in arrival order.
        strict: answer unusable input (``-32700``, ``-32600``) instead of skipping it.
        on_input_end: called once, synchronously, when the reader ends (before waiting for concurrent requests).
    """

    def __init__(
        self,
        *,
        send: ByteSendStream,
        receive: ByteReceiveStream,
        request_handlers: Mapping[str, RequestHandler] | None = None,
        on_notification: Callable[[str, dict[str, Any]], None] | None = None,
        next_id: Callable[[], RequestId] | None = None,
        method_not_found: Callable[[str], str] = _default_method_not_found,
        max_line_bytes: int = MAX_LINE_BYTES,
        request_router: RequestRouter | None = None,
        concurrent_methods: frozenset[str] = frozenset(),
        strict: bool = False,
        on_input_end: Callable[[], None] | None = None,
    ) -> None:
        if max_line_bytes < 1:
            raise ValueError("max_line_bytes must be positive")
        self._send = send
        self._receive = BufferedByteReceiveStream(receive)
        self._handlers: dict[str, RequestHandler] = dict(request_handlers) if request_handlers else {}
        self._on_notification = on_notification
        self._next_id: Callable[[], RequestId] = next_id if next_id is not None else itertools.count().__next__
        self._method_not_found = method_not_found
        self._max_line_bytes = max_line_bytes
        self._pending = PendingRequests()
        # fast_acquire: an uncontended write does not yield at the lock as well as at its send (one checkpoint, not
        # two, per message); acquiring still raises for a cancelled caller, and waiters still queue in order.
        self._write_lock = anyio.Lock(fast_acquire=True)
        self._reader_scope = anyio.CancelScope()
        self._reader_started = False
        self._reader_done = anyio.Event()
        self._closed = False
        self._close_reason: CloseReason | None = None
        self._line_too_long: LineTooLongError | None = None
        self._write_failure: Exception | None = None
        self._router = request_router
        self._concurrent_methods = concurrent_methods
        self._strict = strict
        self._on_input_end = on_input_end
        self._inbound = InboundRequests(self._respond, self._write_reply)
        self.non_json: Final = NonJsonLines()
        """Counts the non-blank lines skipped as no JSON object (text a program printed to stdout)."""

    @property
    def closed(self) -> bool:
        """Whether the connection has ended; requests now fail at once with ``ConnectionClosedError``."""
        return self._closed

    @property
    def close_reason(self) -> CloseReason | None:
        """Why the connection ended (the first reason wins), or ``None`` while it is open."""
        return self._close_reason

    async def run(self) -> None:
        """Read and handle inbound messages in arrival order until EOF, an over-long line or ``close()``.

        Raises:
            RuntimeError: ``run()`` was already called.
        """
        if self._reader_started:
            raise RuntimeError("JsonRpcPeer.run() may only be called once")
        self._reader_started = True
        reason: CloseReason = "closed"
        try:
            async with self._inbound.running(enabled=bool(self._concurrent_methods)):
                reason = await self._read_and_end()
        finally:
            self._mark_closed(reason)
            self._reader_done.set()

    def cancel_request(self, request_id: RequestId) -> bool:
        """Cancel the concurrent inbound request ``request_id`` (never answered); ``False`` if none is in flight."""
        return self._inbound.cancel(request_id)

    def cancel_requests(self) -> None:
        """Cancel every concurrent inbound request in flight (none of them is answered)."""
        self._inbound.cancel_all()

    async def _read_and_end(self) -> CloseReason:
        reason: CloseReason = "closed"
        try:
            with self._reader_scope:
                reason = await self._read_until_closed()
            self._mark_closed(reason)
            if reason == "line-too-long":
                # docs/behaviour.md#acp-wire-framing: the reader closes its end of the pipe, so a child still writing
                # the over-long line gets EPIPE instead of blocking forever on a full pipe.
                with anyio.move_on_after(_RECEIVE_CLOSE_TIMEOUT, shield=True):
                    await self._receive.aclose()
        finally:
            self._mark_closed(reason)
            if self._on_input_end is not None:
                on_input_end, self._on_input_end = self._on_input_end, None
                on_input_end()
        return reason

    async def request(
        self, method: str, params: Mapping[str, object] | None = None, *, on_response: ResponseHook | None = None
    ) -> object:
        """Send a request and wait for its response's ``result`` (``None`` when absent).

        ``on_response`` runs synchronously in the reader with the ``result`` (or the ``ResponseError``) while the
        response is processed, before any later line is read: the place to freeze state that later messages must
        not change (docs/behaviour.md#acp-output-and-freeze). It is not called when the connection closes first.

        Raises:
            ResponseError: the peer answered with an ``error`` member.
            ConnectionClosedError: the connection ended before the response (or had already ended).
            PeerWriteError: the request could not be written.
        """
        outstanding = await self.send_request(method, params, on_response=on_response)
        try:
            return await outstanding.result()
        finally:
            outstanding.forget()  # a cancelled caller leaves nothing behind

    async def send_request(
        self, method: str, params: Mapping[str, object] | None = None, *, on_response: ResponseHook | None = None
    ) -> Outstanding:
        """Write a request and return without waiting for its answer (``Outstanding.result``), which stays pending
        until it arrives or the connection ends; ``on_response`` as for :meth:`request`.

        Raises:
            ConnectionClosedError: the connection had already ended.
            PeerWriteError: the request could not be written (nothing stays pending).
        """
        if self._closed:
            raise self._closed_error()
        request_id = self._next_id()
        data = encode_message(outbound_message(request_id, method, params))
        outstanding = self._pending.register(request_id, on_response, self._closed_error)
        try:
            await self._write(data)
        except BaseException:
            outstanding.forget()
            raise
        return outstanding

    async def notify(self, method: str, params: Mapping[str, object] | None = None) -> None:
        """Send a notification.

        Raises:
            PeerWriteError: the notification could not be written (best-effort callers catch it).
        """
        await self._write(encode_message(outbound_message(None, method, params)))

    def close(self) -> None:
        """Stop reading and fail every pending request with ``ConnectionClosedError``. Idempotent."""
        self._mark_closed("closed")
        if not self._reader_started:
            self._reader_scope.cancel()
            self._reader_done.set()
        elif not self._reader_done.is_set():
            # Only a reader still running needs interrupting: anyio formats the calling task's repr into every
            # first cancel of a scope, a real cost when the exit watch closes a peer whose reader saw EOF already.
            self._reader_scope.cancel()

    async def wait_closed(self) -> None:
        """Wait until the reader has ended (or ``close()`` was called before ``run()``)."""
        await self._reader_done.wait()

    async def _read_until_closed(self) -> CloseReason:
        receive = self._receive.receive
        limit = self._max_line_bytes
        # The bytes after the last newline seen: the start of a line still arriving.
        buffer = bytearray()
        while not self._closed:
            try:
                data = await receive()
            except anyio.ClosedResourceError:
                return "closed"
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                # EOF with or without a final fragment; the fragment is discarded.
                return "eof"
            # Every complete line of one read is handled before the next read; a per-line receive_until would
            # cost an awaited coroutine and a buffer copy per message on the streaming hot path.
            scan_from = len(buffer)
            buffer += data
            start = 0
            newline = buffer.find(b"\n", scan_from)
            while newline >= 0:
                if newline - start > limit:
                    return self._over_long_line()
                message = parse_line(buffer[start:newline])
                if message is None:
                    self.non_json.note(buffer[start:newline])
                    if self._strict:
                        await self._reject(reject_line(buffer[start:newline]))
                    start = newline + 1
                    newline = buffer.find(b"\n", start)
                    continue
                start = newline + 1
                newline = buffer.find(b"\n", start)
                if self._strict:
                    rejection = reject_message(message)
                    if rejection is not None:
                        await self._reject(rejection)
                        continue
                # Classified inline rather than in per-message tasks: order is part of the contract (a
                # notification read before a response is handled before that response's waiter runs), and a task
                # per message would cost the streaming hot path more than the JSON decoding does.
                method = message.get("method")
                request_id = message.get("id")
                if request_id is None:
                    if type(method) is str:
                        self._deliver_notification(method, message.get("params"))
                    else:
                        logger.debug("skipping a JSON-RPC message with neither a method nor an id")
                elif type(request_id) is not int and type(request_id) is not str:
                    logger.debug("skipping a JSON-RPC message whose id is a %s", type(request_id).__name__)
                elif method is None:
                    self._settle_response(request_id, message)
                elif type(method) is str:
                    if method in self._concurrent_methods:
                        self._inbound.start(request_id, method, message.get("params"))
                    else:
                        await self._answer(request_id, method, message.get("params"))
                else:
                    logger.debug("skipping a JSON-RPC message whose method is a %s", type(method).__name__)
                if self._closed:
                    return "closed"
            del buffer[:start]
            # A line still missing its newline that is already over the limit can never become acceptable.
            if len(buffer) > limit:
                return self._over_long_line()
        return "closed"

    def _over_long_line(self) -> CloseReason:
        self._line_too_long = LineTooLongError(f"a JSON-RPC line exceeded {self._max_line_bytes} bytes")
        logger.warning("closing the JSON-RPC connection: the peer wrote a line over %d bytes", self._max_line_bytes)
        return "line-too-long"

    def _deliver_notification(self, method: str, params: object) -> None:
        callback = self._on_notification
        if callback is None:
            return
        try:
            # _params_of inlined: this runs once per streamed update.
            callback(method, cast("dict[str, Any]", params) if type(params) is dict else {})
        except Exception:  # containment boundary: an observer's bug must not stop the reader
            logger.exception("JSON-RPC notification callback failed for %r", method)

    def _settle_response(self, request_id: RequestId, message: dict[str, Any]) -> None:
        error = message.get("error")
        outcome = Settled(result=message.get("result")) if error is None else Settled(error=response_error(error))
        if not self._pending.resolve(request_id, outcome):
            logger.debug("ignoring a JSON-RPC response to unknown request id %.80r", request_id)

    async def _answer(self, request_id: RequestId, method: str, params: object) -> None:
        # Awaited inline by the reader: answers are immediate policy decisions, and inline handling keeps them
        # ordered with the notifications around them.
        await self._write_reply(method, await self._respond(request_id, method, params))

    async def _respond(self, request_id: RequestId, method: str, params: object) -> bytes:
        """The encoded answer to one inbound request (its handler's result, or its error)."""
        handler = self._handlers.get(method)
        if handler is None and self._router is not None:
            handler = self._router(method)
        if handler is None:
            response = error_response(request_id, METHOD_NOT_FOUND_CODE, self._method_not_found(method))
        else:
            try:
                result = await handler(_params_of(params))
            except ErrorReply as reply:
                response = {"jsonrpc": "2.0", "id": request_id, "error": reply.to_wire()}
            except Exception:  # containment boundary: a failing handler becomes one -32603 answer
                response = handler_failure_to_wire(request_id, method)
            else:
                response = {"jsonrpc": "2.0", "id": request_id, "result": result}
        try:
            return encode_message(response)
        except (TypeError, ValueError, RecursionError):
            return encode_message(handler_failure_to_wire(request_id, method))

    async def _write_reply(self, method: str, data: bytes) -> None:
        try:
            await self._write(data)
        except PeerWriteError:
            logger.debug("could not answer inbound JSON-RPC request %r: the peer stopped reading", method)

    async def _reject(self, rejection: Rejection) -> None:
        if rejection == "drop":
            return
        request_id, code, message = rejection
        data = encode_message({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})
        await self._write_reply("(malformed)", data)

    async def _write(self, data: bytes) -> None:
        # One send() per message under the lock, so concurrent writers never interleave bytes on the wire.
        async with self._write_lock:
            if self._write_failure is not None:
                # A pipe that broke stays broken. Writing again would only make asyncio log one "pipe closed by
                # peer" warning per message, e.g. for every request a dead child left queued on its stdout.
                raise PeerWriteError("writing to the JSON-RPC peer failed") from self._write_failure
            try:
                await self._send.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                self._write_failure = exc
                raise PeerWriteError("writing to the JSON-RPC peer failed") from exc

    def _mark_closed(self, reason: CloseReason) -> None:
        if not self._closed:
            self._closed = True
            self._close_reason = reason
        self._fan_out_closed()

    def _fan_out_closed(self) -> None:
        # Synchronous and idempotent: once closed no request can register, so later calls find an empty table.
        self._pending.fail_all(CLOSED)

    def _closed_error(self) -> ConnectionClosedError:
        """Why a request failed: the connection ended (caused by an over-long line, when one ended it)."""
        message = TRANSPORT_CLOSED_MESSAGE if self._close_reason == "closed" else INPUT_CLOSED_MESSAGE
        error = ConnectionClosedError(message)
        error.__cause__ = self._line_too_long
        return error


def _params_of(params: object) -> dict[str, Any]:
    return cast("dict[str, Any]", params) if type(params) is dict else {}
