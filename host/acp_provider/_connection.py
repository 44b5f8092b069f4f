"""The ACP v1 client side of one child connection, on top of the generic ``JsonRpcPeer``.

Offers no ``fs``/``terminal``/auth capability; answers ``session/request_permission`` through the run's policy
callback and every other agent request with ``-32601 Method not found``. Peer failures are mapped at this boundary
to the raw, host-only ``AcpConnectionClosed``/``AcpResponseError`` (``__cause__`` keeps the peer's error).
"""

from __future__ import annotations

import functools
import importlib.metadata
from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final, cast

from anyio.abc import ByteReceiveStream, ByteSendStream

from host._exceptions import (
    AcpConnectionClosed,
    AcpResponseError,
    ConnectionClosedError,
    PeerWriteError,
    ResponseError,
)
from host.acp_provider._wire import update_of
from host.jsonrpc import JsonRpcPeer

__all__ = ["CONNECTION_CLOSED_MESSAGE", "PROTOCOL_VERSION", "AcpConnection", "client_info"]

PROTOCOL_VERSION: Final = 1
"""The ACP protocol version the host speaks."""

CONNECTION_CLOSED_MESSAGE: Final = "ACP connection closed"
"""The raw message of a request that failed because the connection ended."""

_CLIENT_NAME: Final = "subagent-host"
_PACKAGE: Final = "subagent-host"

UpdateObserver = Callable[[Mapping[str, object]], None]
PermissionPolicyFn = Callable[[Mapping[str, object]], dict[str, object]]


def client_info() -> dict[str, str]:
    """The ``clientInfo`` of ``initialize``: the installed package's name and version."""
    return {"name": _CLIENT_NAME, "version": _package_version()}


@functools.cache
def _package_version() -> str:
    # A metadata lookup scans the installed distributions: once per process, not once per run.
    return importlib.metadata.version(_PACKAGE)


@contextmanager
def _map_request_errors() -> Generator[None]:
    """Translate the peer's raw errors into the ACP provider's raw errors (chained)."""
    try:
        yield
    except ResponseError as exc:
        raise AcpResponseError(exc.code, exc.message, exc.data) from exc
    except (ConnectionClosedError, PeerWriteError) as exc:
        raise AcpConnectionClosed(CONNECTION_CLOSED_MESSAGE) from exc


class AcpConnection:
    """One ACP client connection over a child's stdio; ``run()`` is its single ordered reader."""

    def __init__(
        self,
        *,
        send: ByteSendStream,
        receive: ByteReceiveStream,
        on_update: UpdateObserver,
        on_permission: PermissionPolicyFn,
    ) -> None:
        """Build the connection; nothing is read or written until ``run()`` and the requests.

        Args:
            send: the child's stdin.
            receive: the child's stdout.
            on_update: called inline by the reader with each ``session/update`` ``update`` object.
            on_permission: decides a ``session/request_permission`` synchronously; returns the wire result.
        """
        self._on_update = on_update
        self._on_permission = on_permission
        self._peer = JsonRpcPeer(
            send=send,
            receive=receive,
            request_handlers={"session/request_permission": self._answer_permission},
            on_notification=self._on_notification,
        )

    @property
    def closed(self) -> bool:
        """Whether the connection has ended (EOF, an over-long line, or ``close()``)."""
        return self._peer.closed

    async def run(self) -> None:
        """Read and handle every incoming message in arrival order until the connection ends."""
        await self._peer.run()

    def close(self) -> None:
        """Stop reading and fail every pending request (idempotent)."""
        self._peer.close()

    async def wait_closed(self) -> None:
        """Wait until the reader has finished."""
        await self._peer.wait_closed()

    async def initialize(self) -> object:
        """Send ``initialize``; the response body is returned raw (and ignored by the run)."""
        params = {"protocolVersion": PROTOCOL_VERSION, "clientCapabilities": {}, "clientInfo": client_info()}
        with _map_request_errors():
            return await self._peer.request("initialize", params)

    async def new_session(self, cwd: str) -> object:
        """Send ``session/new`` with no MCP servers; the raw result is returned for lenient validation."""
        with _map_request_errors():
            return await self._peer.request("session/new", {"cwd": cwd, "mcpServers": []})

    async def prompt(
        self, session_id: str, blocks: Sequence[Mapping[str, object]], *, on_response: Callable[[object], None]
    ) -> object:
        """Send ``session/prompt`` and return its raw result.

        ``on_response`` runs inline in the reader as the response is processed, before any later line is read:
        the run freezes its output and stream there (acp-provider.md §7).
        """
        with _map_request_errors():
            return await self._peer.request(
                "session/prompt", {"sessionId": session_id, "prompt": list(blocks)}, on_response=on_response
            )

    async def cancel(self, session_id: str) -> None:
        """Send ``session/cancel``; best effort, a dead pipe is ignored."""
        try:
            await self._peer.notify("session/cancel", {"sessionId": session_id})
        except (PeerWriteError, ConnectionClosedError):
            pass

    def _on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method != "session/update":
            return  # extension and unknown notifications are ignored
        update = params.get("update")
        # A decoded JSON object is a plain dict: skip update_of's lenient checks on the streaming hot path.
        if type(update) is dict:
            self._on_update(cast("dict[str, object]", update))
            return
        update = update_of(params)
        if update is not None:
            self._on_update(update)

    async def _answer_permission(self, params: dict[str, Any]) -> object:
        return self._on_permission(params)
