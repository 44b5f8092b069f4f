"""Our own stdio transport for the MCP server: a private non-blocking fd 0 reader and one fd 1 writer task.

The SDK's stdio transport reads stdin in a worker thread that cannot be abandoned (a signal with stdin open would
hang until EOF), answers nothing to an id-bearing bad envelope, has no line cap and accepts NaN. Here:

- fd 0 and fd 1 are claimed: the wire moves to private descriptors, fd 0 then reads ``/dev/null`` and fd 1 points
  at stderr, so a stray print cannot corrupt the wire;
- a line longer than ``MAX_LINE_BYTES`` closes the connection, as ``host.jsonrpc`` does;
- a line that is not UTF-8 or not standard JSON (``NaN``, ``Infinity``, absurd nesting) is answered ``-32700``
  with id null; a JSON value that is not a valid envelope is answered ``-32600`` (with its id when it has a usable
  one, else null); a notification or a response that does not validate is dropped;
- every outgoing message goes through one writer task, in order.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Final, cast

import anyio
import anyio.lowlevel
import mcp_types as types
from anyio.abc import ObjectSendStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from host.jsonrpc import MAX_LINE_BYTES

__all__ = ["stdio_transport"]

logger = logging.getLogger(__name__)

_READ_CHUNK: Final = 1 << 16
_INBOX_SIZE: Final = 16
_OUTBOX_SIZE: Final = 64
_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _reject_constant(name: str) -> object:
    raise ValueError(f"non-standard JSON constant {name}")


_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant)


class _Unparsable(Exception):
    """The line is not UTF-8 or not one standard JSON value."""


def _error_line(request_id: int | str | None, code: int, message: str) -> bytes:
    payload = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return (_ENCODER.encode(payload) + "\n").encode("utf-8")


def _parse(line: bytes) -> object:
    try:
        text = line.decode("utf-8")
        value, end = _DECODER.raw_decode(text.strip())
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _Unparsable from exc
    if end != len(text.strip()):
        raise _Unparsable
    return cast("object", value)


def _usable_id(envelope: dict[str, Any]) -> int | str | None:
    request_id = envelope.get("id")
    # A bool is never an id: True would alias request id 1.
    if isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool)):
        return request_id
    return None


def classify_line(line: bytes) -> SessionMessage | bytes | None:
    """Turn one wire line into a message for the server, an error line to write back, or ``None`` (skip it)."""
    if not line.strip():
        return None
    try:
        value = _parse(line)
    except _Unparsable:
        return _error_line(None, types.PARSE_ERROR, "Parse error")
    if not isinstance(value, dict):
        return _error_line(None, types.INVALID_REQUEST, "Invalid Request")
    envelope = cast("dict[str, Any]", value)
    request_id = _usable_id(envelope)
    is_response = "method" not in envelope and ("result" in envelope or "error" in envelope)
    try:
        message = types.jsonrpc_message_adapter.validate_python(envelope, by_name=False)
    except ValidationError:
        message = None
    if message is not None and (request_id is not None or "id" not in envelope):
        return SessionMessage(message)
    if is_response or ("id" not in envelope and "method" in envelope):
        # A response or a notification that does not validate has nobody to answer.
        return None
    return _error_line(request_id, types.INVALID_REQUEST, "Invalid Request")


class _SessionWriter:
    """The server's write stream: serialises each ``SessionMessage`` into the writer task's outbox."""

    def __init__(self, outbox: MemoryObjectSendStream[bytes]) -> None:
        self._outbox = outbox

    async def send(self, item: SessionMessage, /) -> None:
        data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
        await self._outbox.send(data.encode("utf-8") + b"\n")

    async def aclose(self) -> None:
        await self._outbox.aclose()

    async def __aenter__(self) -> _SessionWriter:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc_val: BaseException | None, exc_tb: TracebackType | None
    ) -> None:
        await self.aclose()


@dataclass(frozen=True, slots=True)
class _Wire:
    fd: int
    pollable: bool
    """A pipe, socket or terminal (waited on); a regular file never blocks and cannot be polled."""


def _claim(fd: int, flags: int, diversion: int) -> _Wire:
    """Move the wire on ``fd`` to a private descriptor (non-blocking when it is a pipe) and point ``fd`` at
    ``diversion``."""
    mode = os.fstat(fd).st_mode
    private: int | None = None
    if stat.S_ISFIFO(mode):
        with suppress(OSError):
            # A fresh open file description: O_NONBLOCK on it cannot leak into the one the parent shares.
            private = os.open(f"/proc/self/fd/{fd}", flags | os.O_NONBLOCK | os.O_CLOEXEC)
    if private is None:
        private = os.dup(fd)
        os.set_inheritable(private, False)
    os.dup2(diversion, fd)
    return _Wire(private, stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode))


async def _readable(wire: _Wire) -> None:
    if wire.pollable:
        await anyio.wait_readable(wire.fd)
    else:
        await anyio.lowlevel.checkpoint()


async def _writable(wire: _Wire) -> None:
    if wire.pollable:
        await anyio.wait_writable(wire.fd)
    else:
        await anyio.lowlevel.checkpoint()


async def _read_lines(
    wire: _Wire,
    inbox: ObjectSendStream[SessionMessage | Exception],
    outbox: ObjectSendStream[bytes],
    on_eof: Callable[[], None],
) -> None:
    try:
        await _read_into(wire, inbox, outbox)
    finally:
        on_eof()


async def _read_into(
    wire: _Wire, inbox: ObjectSendStream[SessionMessage | Exception], outbox: ObjectSendStream[bytes]
) -> None:
    buffer = bytearray()
    async with inbox, outbox:
        while True:
            try:
                await _readable(wire)
                chunk = os.read(wire.fd, _READ_CHUNK)
            except BlockingIOError:
                continue
            except OSError:
                logger.warning("subagent-host serve: reading stdin failed; closing the connection")
                return
            if not chunk:
                return
            buffer += chunk
            while True:
                newline = buffer.find(b"\n")
                if newline < 0:
                    break
                line = bytes(buffer[:newline])
                del buffer[: newline + 1]
                classified = classify_line(line)
                if isinstance(classified, SessionMessage):
                    await inbox.send(classified)
                elif classified is not None:
                    await outbox.send(classified)
            if len(buffer) > MAX_LINE_BYTES:
                logger.warning("subagent-host serve: a line exceeded %d bytes; closing the connection", MAX_LINE_BYTES)
                return


async def _write_lines(wire: _Wire, outbox: MemoryObjectReceiveStream[bytes]) -> None:
    async with outbox:
        async for data in outbox:
            view = memoryview(data)
            while view:
                try:
                    await _writable(wire)
                    written = os.write(wire.fd, view)
                except BlockingIOError:
                    continue
                except OSError:
                    # The client went away: drain the outbox so no sender blocks, write nothing more.
                    async for _ in outbox:
                        pass
                    return
                view = view[written:]


@asynccontextmanager
async def stdio_transport(
    on_eof: Callable[[], None],
) -> AsyncGenerator[tuple[MemoryObjectReceiveStream[SessionMessage | Exception], _SessionWriter]]:
    """Serve the wire on fd 0 / fd 1; yields ``(read stream, write stream)`` for ``Server.run``.

    ``on_eof`` is called once the connection's input ended (EOF, a read error or an over-long line).

    On exit the writer drains what the server wrote, then fd 0 and fd 1 are restored.
    """
    saved_in, saved_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        wire_in = _claim(0, os.O_RDONLY, devnull)
        wire_out = _claim(1, os.O_WRONLY, 2)
    finally:
        os.close(devnull)
    inbox_send, inbox_receive = anyio.create_memory_object_stream[SessionMessage | Exception](_INBOX_SIZE)
    outbox_send, outbox_receive = anyio.create_memory_object_stream[bytes](_OUTBOX_SIZE)
    writer = _SessionWriter(outbox_send.clone())
    try:
        async with anyio.create_task_group() as writers:
            writers.start_soon(_write_lines, wire_out, outbox_receive)
            try:
                async with anyio.create_task_group() as readers:
                    readers.start_soon(_read_lines, wire_in, inbox_send, outbox_send, on_eof)
                    try:
                        yield inbox_receive, writer
                    finally:
                        readers.cancel_scope.cancel()
            finally:
                await writer.aclose()
    finally:
        for fd, saved in ((0, saved_in), (1, saved_out)):
            with suppress(OSError):
                os.dup2(saved, fd)
            with suppress(OSError):
                os.close(saved)
        for wire in (wire_in, wire_out):
            with suppress(OSError):
                os.close(wire.fd)
