"""In-memory byte streams for driving a ``JsonRpcPeer`` from the test's side of the wire.

``open_wire`` runs a peer over two memory object streams of ``bytes`` adapted to anyio's byte-stream ABCs; the
test plays the remote end through ``Remote``, writing raw bytes and reading back exactly what the peer sent.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, cast

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from host.jsonrpc import MAX_LINE_BYTES, JsonRpcPeer
from host.jsonrpc._framing import RequestId
from host.jsonrpc._peer import RequestHandler


class MemoryByteSendStream(ByteSendStream):
    """A ``ByteSendStream`` over a memory object stream of ``bytes``; one ``send()`` is one item."""

    def __init__(self, inner: MemoryObjectSendStream[bytes]) -> None:
        self._inner = inner

    async def send(self, item: bytes) -> None:
        await self._inner.send(item)

    async def send_eof(self) -> None:
        await self._inner.aclose()

    async def aclose(self) -> None:
        await self._inner.aclose()


class MemoryByteReceiveStream(ByteReceiveStream):
    """A ``ByteReceiveStream`` over a memory object stream of ``bytes``, honouring ``max_bytes``."""

    def __init__(self, inner: MemoryObjectReceiveStream[bytes]) -> None:
        self._inner = inner
        self._item = b""
        self._offset = 0

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._offset >= len(self._item):
            self._item = await self._inner.receive()
            self._offset = 0
        chunk = self._item[self._offset : self._offset + max_bytes]
        self._offset += len(chunk)
        return chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


@dataclass
class Remote:
    """The far end of the wire: raw writes into the peer, and the messages the peer wrote."""

    to_peer: MemoryObjectSendStream[bytes]
    from_peer: MemoryObjectReceiveStream[bytes]

    async def write(self, raw: bytes) -> None:
        await self.to_peer.send(raw)

    async def send_json(self, message: Mapping[str, object]) -> None:
        await self.write(json.dumps(message).encode() + b"\n")

    async def read_raw(self) -> bytes:
        """One ``send()`` of the peer, which must be exactly one ``\\n``-terminated line."""
        raw = await self.from_peer.receive()
        assert raw.endswith(b"\n")
        assert raw.count(b"\n") == 1
        return raw

    async def read_message(self) -> dict[str, Any]:
        value = json.loads(await self.read_raw())
        assert isinstance(value, dict)
        return cast("dict[str, Any]", value)

    def eof(self) -> None:
        self.to_peer.close()


async def request_into(
    outcome: list[object], peer: JsonRpcPeer, method: str, params: Mapping[str, object] | None = None
) -> None:
    """Send a request through ``peer`` and append its result to ``outcome`` (a task body for ``start_soon``)."""
    # Omit ``params`` rather than pass None, so a no-params call stays exactly that.
    outcome.append(await (peer.request(method) if params is None else peer.request(method, params)))


@dataclass
class Wire:
    peer: JsonRpcPeer
    remote: Remote


@asynccontextmanager
async def open_wire(
    *,
    request_handlers: Mapping[str, RequestHandler] | None = None,
    on_notification: Callable[[str, dict[str, Any]], None] | None = None,
    next_id: Callable[[], RequestId] | None = None,
    method_not_found: Callable[[str], str] | None = None,
    max_line_bytes: int = MAX_LINE_BYTES,
) -> AsyncGenerator[Wire]:
    """Run a peer over fresh memory streams; on exit, close it and wait (bounded) for its reader to end."""
    to_peer_send, to_peer_receive = anyio.create_memory_object_stream[bytes](math.inf)
    from_peer_send, from_peer_receive = anyio.create_memory_object_stream[bytes](math.inf)
    send = MemoryByteSendStream(from_peer_send)
    receive = MemoryByteReceiveStream(to_peer_receive)
    if method_not_found is None:
        peer = JsonRpcPeer(
            send=send,
            receive=receive,
            request_handlers=request_handlers,
            on_notification=on_notification,
            next_id=next_id,
            max_line_bytes=max_line_bytes,
        )
    else:
        peer = JsonRpcPeer(
            send=send,
            receive=receive,
            request_handlers=request_handlers,
            on_notification=on_notification,
            next_id=next_id,
            method_not_found=method_not_found,
            max_line_bytes=max_line_bytes,
        )
    with to_peer_send, to_peer_receive, from_peer_send, from_peer_receive:
        async with anyio.create_task_group() as tg:
            tg.start_soon(peer.run)
            try:
                yield Wire(peer, Remote(to_peer_send, from_peer_receive))
            finally:
                peer.close()
                with anyio.fail_after(5):
                    await peer.wait_closed()
