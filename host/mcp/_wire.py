"""The MCP wire vocabulary ``serve`` speaks: protocol versions, ``_meta`` keys, error codes and the error reply.

Everything here is plain data, so the protocol layer imports no SDK: ``mcp_types`` alone costs more to import than
the whole of ``serve`` may spend before its first answer (the tests validate our messages against it instead).
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

from host.jsonrpc import ErrorReply

__all__ = [
    "CLIENT_CAPABILITIES_META_KEY",
    "CLIENT_INFO_META_KEY",
    "HANDSHAKE_VERSIONS",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "LATEST_HANDSHAKE_VERSION",
    "LOG_LEVELS",
    "LOG_LEVEL_META_KEY",
    "METHOD_NOT_FOUND",
    "MODERN_VERSION",
    "PARSE_ERROR",
    "PROTOCOL_VERSION_META_KEY",
    "SERVER_INFO_META_KEY",
    "SERVER_NAME",
    "HEADER_MISMATCH",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "Era",
    "LoggingLevel",
    "McpError",
    "invalid_params",
    "method_not_found",
]

SERVER_NAME: Final = "subagent-host"

MODERN_VERSION: Final = "2026-07-28"
"""The stateless revision: every request carries its own ``_meta`` envelope; no handshake."""
HANDSHAKE_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""The revisions an ``initialize`` may negotiate: a known one is echoed, any other gets the latest."""
LATEST_HANDSHAKE_VERSION: Final = "2025-11-25"

PROTOCOL_VERSION_META_KEY: Final = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_META_KEY: Final = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_META_KEY: Final = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_META_KEY: Final = "io.modelcontextprotocol/logLevel"
SERVER_INFO_META_KEY: Final = "io.modelcontextprotocol/serverInfo"

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
UNSUPPORTED_PROTOCOL_VERSION: Final = -32022
HEADER_MISMATCH: Final = -32020
"""``HeaderMismatch`` (2026-07-28 Streamable HTTP): a routing header disagrees with the body, or is missing."""

Era: TypeAlias = Literal["modern", "handshake"]
LoggingLevel: TypeAlias = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
LOG_LEVELS: Final[tuple[LoggingLevel, ...]] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
"""Every level, lowest first."""


class McpError(ErrorReply):
    """A request answered with a JSON-RPC ``error``: ``code``, a fixed ``message`` and optional ``data``.

    The message never carries exception text or anything a child wrote.
    """


def method_not_found(method: str) -> McpError:
    """``-32601`` naming the method in ``data``, as the SDK's server answers."""
    return McpError(METHOD_NOT_FOUND, "Method not found", method)


def invalid_params() -> McpError:
    """``-32602`` with the SDK server's fixed text (never pydantic's, which would echo the input)."""
    return McpError(INVALID_PARAMS, "Invalid request parameters", "")
