"""The MCP protocol layer of ``serve``: both protocol eras over the host's registry, with no SDK at run time.

``McpServer`` answers requests for any ``Connection``; the transports (``host.server``: stdio, Streamable HTTP)
carry them. The official ``mcp`` SDK is only the tests' conformance oracle: importing it costs over a second, longer
than real MCP clients wait for ``serve``'s first answer.
"""

from __future__ import annotations

from host.mcp._connection import Connection, Notify
from host.mcp._notices import Notices
from host.mcp._server import McpServer, check_envelope, has_modern_envelope
from host.mcp._tools import DELEGATION_OUTPUT_SCHEMA
from host.mcp._wire import (
    CLIENT_CAPABILITIES_META_KEY,
    HANDSHAKE_VERSIONS,
    HEADER_MISMATCH,
    INVALID_REQUEST,
    MODERN_VERSION,
    PROTOCOL_VERSION_META_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
    McpError,
)

__all__ = [
    "CLIENT_CAPABILITIES_META_KEY",
    "DELEGATION_OUTPUT_SCHEMA",
    "HANDSHAKE_VERSIONS",
    "HEADER_MISMATCH",
    "INVALID_REQUEST",
    "MODERN_VERSION",
    "PROTOCOL_VERSION_META_KEY",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "Connection",
    "McpError",
    "McpServer",
    "Notices",
    "Notify",
    "check_envelope",
    "has_modern_envelope",
]
