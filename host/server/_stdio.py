"""MCP over stdio: fd 0 and fd 1 claimed as non-blocking byte streams, served by the project's JSON-RPC peer.

- fd 0 and fd 1 are claimed: the wire moves to private descriptors, fd 0 then reads ``/dev/null`` and fd 1 points
  at stderr, so a stray print cannot corrupt the wire. Stdin is read with ``wait_readable`` + ``os.read``, never in
  a worker thread, so a signal with stdin open ends ``serve`` at once;
- the peer answers ``-32700``/``-32600`` for unusable lines, closes the connection on a line over
  ``MAX_LINE_BYTES``, answers inline in arrival order, and runs each ``tools/call`` in a task of its own that
  ``notifications/cancelled`` cancels (a cancelled id is never answered);
- stdin EOF (an empty stdin included) or a read error ends the input: ``on_input_end`` starts the shutdown.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

import anyio
import anyio.lowlevel
from anyio.abc import ByteReceiveStream, ByteSendStream

from host.jsonrpc import JsonRpcPeer, RequestHandler
from host.mcp import Connection, McpServer

__all__ = ["serve_stdio"]

logger = logging.getLogger(__name__)

_READ_CHUNK: Final = 1 << 16
_CONCURRENT_METHODS: Final = frozenset({"tools/call"})


@dataclass(frozen=True, slots=True)
class _Wire:
    fd: int
    pollable: bool
    """A pipe, socket or terminal (waited on); a regular file or ``/dev/null`` never blocks and cannot be polled."""


def _claim(fd: int, flags: int, diversion: int) -> _Wire:
    """Move the wire on ``fd`` to a private descriptor (non-blocking when it is a pipe) and point ``fd`` at
    ``diversion``."""
    mode = os.fstat(fd).st_mode
    private: int | None = None
    if stat.S_ISFIFO(mode):
        with suppress(OSError):
            # A fresh open file description: O_NONBLOCK on it cannot leak into the one the parent shares.
            private = os.open(f"/proc/self/fd/{fd}", flags | os.O_NONBLOCK | os.O_CLOEXEC)
    pollable = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd))
    if private is None:
        private = os.dup(fd)
        os.set_inheritable(private, False)
    os.dup2(diversion, fd)
    return _Wire(private, pollable)


class _FdReceiveStream(ByteReceiveStream):
    def __init__(self, wire: _Wire) -> None:
        self._wire = wire

    async def receive(self, max_bytes: int = _READ_CHUNK) -> bytes:
        while True:
            if self._wire.pollable:
                await anyio.wait_readable(self._wire.fd)
            else:
                await anyio.lowlevel.checkpoint()
            try:
                data = os.read(self._wire.fd, max_bytes)
            except BlockingIOError:
                continue
            except OSError as exc:
                logger.warning("subagent-host serve: reading stdin failed; closing the connection")
                raise anyio.BrokenResourceError from exc
            if not data:
                raise anyio.EndOfStream
            return data

    async def aclose(self) -> None:
        await anyio.lowlevel.checkpoint()


class _FdSendStream(ByteSendStream):
    """Writes whole messages; a write cancelled part-way leaves the wire unusable, so it fails from then on."""

    def __init__(self, wire: _Wire) -> None:
        self._wire = wire
        self._broken = False

    async def send(self, item: bytes) -> None:
        if self._broken:
            raise anyio.BrokenResourceError
        view = memoryview(item)
        try:
            while view:
                if self._wire.pollable:
                    await anyio.wait_writable(self._wire.fd)
                try:
                    written = os.write(self._wire.fd, view)
                except BlockingIOError:
                    continue
                view = view[written:]
        except OSError as exc:
            self._broken = True
            raise anyio.BrokenResourceError from exc
        except BaseException:
            if len(view) != len(item):
                self._broken = True
            raise

    async def aclose(self) -> None:
        await anyio.lowlevel.checkpoint()


@asynccontextmanager
async def _claimed_stdio() -> AsyncGenerator[tuple[_FdReceiveStream, _FdSendStream]]:
    """fd 0 / fd 1 as byte streams for the block; on exit both are restored."""
    saved_in, saved_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        wire_in = _claim(0, os.O_RDONLY, devnull)
        wire_out = _claim(1, os.O_WRONLY, 2)
    finally:
        os.close(devnull)
    try:
        yield _FdReceiveStream(wire_in), _FdSendStream(wire_out)
    finally:
        for fd, saved in ((0, saved_in), (1, saved_out)):
            with suppress(OSError):
                os.dup2(saved, fd)
            with suppress(OSError):
                os.close(saved)
        for wire in (wire_in, wire_out):
            with suppress(OSError):
                os.close(wire.fd)


async def serve_stdio(
    server: McpServer, on_stop: Callable[[Callable[[], None]], None], stop: Callable[[], None]
) -> None:
    """Serve one MCP connection on stdin/stdout until the input ends or ``stop`` runs (then every call is
    cancelled and settles); return once every call has finished.

    Args:
        server: the protocol layer.
        on_stop: registers what the shutdown must do to this connection.
        stop: starts the shutdown (called when the input ends).
    """
    async with _claimed_stdio() as (receive, send):
        connection = Connection()

        def route(method: str) -> RequestHandler:
            return partial(_handle, server, connection, method, peer.notify)

        peer = JsonRpcPeer(
            send=send,
            receive=receive,
            request_router=route,
            on_notification=partial(_notify, server, connection, lambda request_id: peer.cancel_request(request_id)),
            concurrent_methods=_CONCURRENT_METHODS,
            strict=True,
            on_input_end=stop,
        )
        connection.notify = peer.notify
        on_stop(peer.cancel_requests)
        on_stop(peer.close)
        try:
            await peer.run()
        finally:
            connection.closed = True


def _notify(
    server: McpServer, connection: Connection, cancel: Callable[[Any], object], method: str, params: dict[str, Any]
) -> None:
    server.notification(connection, method, params, cancel)


async def _handle(
    server: McpServer, connection: Connection, method: str, notify: Any, params: dict[str, Any]
) -> dict[str, Any]:
    return await server.request(connection, method, params, notify)
