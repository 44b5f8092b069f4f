"""The MCP protocol layer over the host's registry: one method table per era, the handshake and the envelope ladder.

Transport-agnostic: a transport hands each request (``method``, ``params``) with its ``Connection`` and a channel for
the request's own notifications, and writes what ``request`` returns or the ``McpError`` it raises. Answers match
what the MCP SDK's server answers (the tests hold them against the official client and ``mcp_types``):

- **2026-07-28** (stateless): every request carries ``_meta`` with ``io.modelcontextprotocol/protocolVersion`` and
  ``clientCapabilities`` (else ``-32602`` naming what is missing; an unsupported version ``-32022``); methods are
  ``server/discover``, ``tools/list`` and ``tools/call``; results carry ``resultType`` and the ``serverInfo`` stamp,
  and the cacheable ones ``ttlMs``/``cacheScope``; ``initialize`` on such a connection is ``-32022``.
- **Handshake** (2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05): ``initialize`` echoes a supported version and
  answers the latest otherwise (a re-``initialize`` is accepted); ``ping``, ``tools/list``, ``tools/call`` and
  ``logging/setLevel``; before ``initialize`` only ``ping`` is served (others ``-32602``); an enveloped request is
  ``-32600``.

Unknown methods get ``-32601``, bad params ``-32602`` with a fixed text, and an unexpected exception ``-32603``
``Internal error`` (logged on stderr, never on the wire).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, TypeAlias, cast

from pydantic import ValidationError

from host._host import Host
from host._version import package_version
from host.config import delegation_tool_name
from host.jsonrpc import RequestId
from host.mcp._calls import CallHandler
from host.mcp._connection import Connection, Notify, RequestContext
from host.mcp._models import CallToolParams, CancelledParams, InitializeParams, ListToolsParams, SetLevelParams, meta_of
from host.mcp._notices import Notices
from host.mcp._tools import mcp_tools
from host.mcp._wire import (
    CLIENT_CAPABILITIES_META_KEY,
    HANDSHAKE_VERSIONS,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    LATEST_HANDSHAKE_VERSION,
    MODERN_VERSION,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
    SERVER_NAME,
    UNSUPPORTED_PROTOCOL_VERSION,
    McpError,
    invalid_params,
    method_not_found,
)

__all__ = ["CAPABILITIES", "McpServer", "has_modern_envelope"]

logger = logging.getLogger(__name__)

CAPABILITIES: Final[Mapping[str, Any]] = {"logging": {}, "tools": {"listChanged": False}}
_INTERNAL_ERROR_MESSAGE: Final = "Internal error"
_CACHE_HINTS: Final[Mapping[str, Any]] = {"ttlMs": 0, "cacheScope": "private"}
_ENVELOPE_ON_HANDSHAKE: Final = " ".join(
    (
        "this connection serves the handshake protocol era;",
        "requests carrying the 2026-07-28 envelope are not accepted on it",
    )
)
_HANDSHAKE_ON_MODERN: Final = "connection is serving the 2026-07-28 protocol; the initialize handshake is not accepted"

_Handler: TypeAlias = Callable[[RequestContext, dict[str, Any]], Awaitable[dict[str, Any]]]


def has_modern_envelope(params: Mapping[str, Any] | None) -> bool:
    """Whether ``params._meta`` carries the 2026-07-28 protocol-version key (legacy requests never mint it)."""
    if not params:
        return False
    meta = params.get("_meta")
    return isinstance(meta, dict) and PROTOCOL_VERSION_META_KEY in meta


class McpServer:
    """Answers MCP requests and notifications for any number of connections, over the host's registry."""

    def __init__(self, host: Host, notices: Notices) -> None:
        self._host = host
        self._delegation_tools = {delegation_tool_name(name): name for name in host.config.providers}
        self._call_tool = CallHandler(host, self._delegation_tools, notices)
        self._server_info = {"name": SERVER_NAME, "version": package_version()}
        self._handshake: dict[str, _Handler] = {
            "initialize": self._initialize,
            "ping": self._ping,
            "tools/list": self._list_tools,
            "tools/call": self._call,
            "logging/setLevel": self._set_level,
        }
        self._modern: dict[str, _Handler] = {
            "server/discover": self._discover,
            "tools/list": self._list_tools,
            "tools/call": self._call,
        }

    async def request(
        self, connection: Connection, method: str, params: dict[str, Any], send: Notify
    ) -> dict[str, Any]:
        """The ``result`` of one request on ``connection``.

        Raises:
            McpError: the request's JSON-RPC error.
        """
        try:
            if connection.era is None:
                modern = method != "initialize" and has_modern_envelope(params)
                connection.era = "modern" if modern else "handshake"
            if connection.era == "modern":
                return await self._modern_request(connection, method, params, send)
            return await self._handshake_request(connection, method, params, send)
        except McpError:
            raise
        except ValidationError:
            raise invalid_params() from None
        except Exception:  # containment boundary: one fixed -32603, the detail stays in the log
            logger.exception("subagent-host serve: handling %s failed", method)
            raise McpError(INTERNAL_ERROR, _INTERNAL_ERROR_MESSAGE) from None

    def notification(
        self, connection: Connection, method: str, params: dict[str, Any], cancel: Callable[[RequestId], object]
    ) -> None:
        """Handle one notification: a peer's cancel (``cancel`` the request), the handshake's ``initialized``."""
        if method == "notifications/cancelled":
            try:
                cancelled = CancelledParams.model_validate(params)
            except ValidationError:
                logger.debug("subagent-host serve: dropped a malformed notifications/cancelled")
                return
            cancel(cancelled.request_id)
        elif method == "notifications/initialized" and connection.era != "modern":
            connection.initialized = True

    async def _modern_request(
        self, connection: Connection, method: str, params: dict[str, Any], send: Notify
    ) -> dict[str, Any]:
        if method == "initialize":
            requested = params.get("protocolVersion")
            data: dict[str, Any] = {"supported": [MODERN_VERSION]}
            if isinstance(requested, str):
                data["requested"] = requested
            raise McpError(UNSUPPORTED_PROTOCOL_VERSION, _HANDSHAKE_ON_MODERN, data)
        check_envelope(params)
        handler = self._modern.get(method)
        if handler is None:
            raise method_not_found(method)
        result = await handler(RequestContext(connection, meta_of(params), send), params)
        result["resultType"] = "complete"
        result["_meta"] = {SERVER_INFO_META_KEY: dict(self._server_info)}
        return result

    async def _handshake_request(
        self, connection: Connection, method: str, params: dict[str, Any], send: Notify
    ) -> dict[str, Any]:
        if method != "initialize" and has_modern_envelope(params):
            raise McpError(INVALID_REQUEST, _ENVELOPE_ON_HANDSHAKE)
        handler = self._handshake.get(method)
        if handler is None:
            raise method_not_found(method)
        if not connection.initialized and method not in ("initialize", "ping"):
            raise invalid_params()
        return await handler(RequestContext(connection, meta_of(params), send), params)

    async def _initialize(self, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
        offered = InitializeParams.model_validate(params).protocol_version
        negotiated = offered if offered in HANDSHAKE_VERSIONS else LATEST_HANDSHAKE_VERSION
        ctx.connection.protocol_version = negotiated
        ctx.connection.initialized = True
        return {
            "protocolVersion": negotiated,
            "capabilities": _copy(CAPABILITIES),
            "serverInfo": dict(self._server_info),
        }

    async def _ping(self, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
        return {}

    async def _discover(self, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
        return {"supportedVersions": [MODERN_VERSION], "capabilities": _copy(CAPABILITIES), **_CACHE_HINTS}

    async def _list_tools(self, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
        ListToolsParams.model_validate(params)
        result: dict[str, Any] = {"tools": mcp_tools(self._host.tools(), self._delegation_tools)}
        if ctx.connection.era == "modern":
            result.update(_CACHE_HINTS)
        return result

    async def _call(self, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
        return await self._call_tool(ctx, CallToolParams.model_validate(params))

    async def _set_level(self, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
        ctx.connection.log_level = SetLevelParams.model_validate(params).level
        return {}


def check_envelope(params: Mapping[str, Any]) -> str:
    """The 2026-07-28 envelope ladder: the protocol version of a well-formed, supported envelope.

    Raises:
        McpError: ``-32602`` for a missing or malformed envelope, ``-32022`` for an unsupported version.
    """
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        raise McpError(
            INVALID_PARAMS,
            "params._meta must be an object carrying the required "
            f"{PROTOCOL_VERSION_META_KEY!r} and {CLIENT_CAPABILITIES_META_KEY!r} envelope keys",
        )
    envelope = cast("dict[str, Any]", meta)
    missing = [key for key in (PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY) if key not in envelope]
    if missing:
        raise McpError(INVALID_PARAMS, f"params._meta is missing the required envelope key(s): {', '.join(missing)}")
    version = envelope[PROTOCOL_VERSION_META_KEY]
    if not isinstance(version, str):
        raise McpError(INVALID_PARAMS, "the protocol-version envelope value must be a string")
    if version != MODERN_VERSION:
        raise McpError(
            UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            {"supported": [MODERN_VERSION], "requested": version},
        )
    return version


def _copy(value: Mapping[str, Any]) -> dict[str, Any]:
    return cast("dict[str, Any]", json.loads(json.dumps(value)))
