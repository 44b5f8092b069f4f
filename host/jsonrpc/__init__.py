"""The bidirectional newline-delimited JSON-RPC 2.0 peer shared by the ACP and DSH SDK clients and the MCP server.

It knows nothing of any protocol: ids, the ``-32601`` text and inbound handlers are supplied by the caller. Its
failures are the ``JsonRpcError`` family of ``host._exceptions`` and are raw, host-only facts.
"""

from __future__ import annotations

from host.jsonrpc._envelope import ErrorReply
from host.jsonrpc._framing import MAX_LINE_BYTES, RequestId
from host.jsonrpc._peer import JsonRpcPeer, RequestHandler, RequestRouter
from host.jsonrpc._pending import Outstanding

__all__ = [
    "MAX_LINE_BYTES",
    "ErrorReply",
    "JsonRpcPeer",
    "Outstanding",
    "RequestHandler",
    "RequestId",
    "RequestRouter",
]
