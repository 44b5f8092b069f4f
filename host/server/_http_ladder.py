"""The Streamable HTTP checks that come before MCP: refusal bodies, ``Accept``, the body bound and the header rung.

Every refusal is a JSON-RPC error with ``id: null`` (``-32600`` unless a code is given) and a fixed message, as the
MCP SDK's transport answers: a client can always parse the body, and no body carries exception text.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response

from host._text import encode_json
from host.jsonrpc import MAX_LINE_BYTES
from host.mcp import (
    HEADER_MISMATCH,
    INVALID_REQUEST,
    MODERN_VERSION,
    PROTOCOL_VERSION_META_KEY,
    UNSUPPORTED_PROTOCOL_VERSION,
    McpError,
)

__all__ = [
    "MAX_BODY_BYTES",
    "METHOD_HEADER",
    "NAME_HEADER",
    "VERSION_HEADER",
    "accepts",
    "bounded_body",
    "error_response",
    "header_mismatch",
    "json_response",
    "refusal",
    "unsupported_version",
]

MAX_BODY_BYTES: Final = MAX_LINE_BYTES
"""The largest ``POST`` body read (the stdio line bound); a larger one is 413 and is not read further."""
VERSION_HEADER: Final = "mcp-protocol-version"
METHOD_HEADER: Final = "mcp-method"
NAME_HEADER: Final = "mcp-name"
_ROUTING_HEADERS: Final = frozenset({VERSION_HEADER.encode(), METHOD_HEADER.encode(), NAME_HEADER.encode()})
_JSON: Final = "application/json"
_NAME_BEARING: Final = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
_B64_PREFIX: Final = "=?base64?"
_B64_SUFFIX: Final = "?="


def error_response(
    request_id: object,
    code: int,
    message: str,
    status: int,
    data: Any = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """A JSON-RPC error response (``id`` kept, ``null`` when there is none) with HTTP ``status``."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    body = {"jsonrpc": "2.0", "id": request_id, "error": error}
    return json_response(body, status, headers)


def json_response(body: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> Response:
    """``body`` as an ``application/json`` response (a lone surrogate, say in a client's request id, as its
    ``\\uXXXX`` escape: Starlette's ``JSONResponse`` would raise)."""
    return Response(encode_json(body), status_code=status, headers=dict(headers) if headers else None, media_type=_JSON)


def refusal(status: int, message: str, headers: Mapping[str, str] | None = None) -> Response:
    """An HTTP refusal: ``-32600`` with ``id: null`` and the fixed ``message``."""
    return error_response(None, INVALID_REQUEST, message, status, headers=headers)


def unsupported_version(requested: str) -> McpError:
    """``-32022`` for a ``MCP-Protocol-Version`` this server does not serve (HTTP 400)."""
    data = {"supported": [MODERN_VERSION], "requested": requested}
    return McpError(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", data)


def accepts(request: Request) -> tuple[bool, bool]:
    """Whether the ``Accept`` header admits ``application/json`` and ``text/event-stream`` (wildcards count)."""
    types = {part.split(";")[0].strip().lower() for part in request.headers.get("accept", "").split(",")}
    wildcard = "*/*" in types
    return (
        wildcard or bool(types & {"application/json", "application/*"}),
        wildcard or bool(types & {"text/event-stream", "text/*"}),
    )


async def bounded_body(request: Request) -> bytes | None:
    """The request body, or ``None`` once it is known to exceed ``MAX_BODY_BYTES`` (the rest is never read)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            return None
    return bytes(body)


def header_mismatch(request: Request, method: str, params: Mapping[str, Any]) -> McpError | None:
    """The 2026-07-28 header rung (``-32020``, HTTP 400): the routing headers must repeat what the body says.

    Runs after the envelope is known to carry its keys and before the version is judged, as the SDK's ladder does:
    a routing header sent twice, ``MCP-Protocol-Version`` missing or not the envelope's version, ``Mcp-Method`` not
    the method, or (for a name-bearing method) ``Mcp-Name``, base64 sentinel decoded, not the body's name.
    """
    seen: set[bytes] = set()
    for raw_name, _ in request.scope["headers"]:
        name = raw_name.lower()
        if name in _ROUTING_HEADERS:
            if name in seen:
                return McpError(HEADER_MISMATCH, f"{name.decode()} header appears more than once")
            seen.add(name)
    meta: Mapping[str, Any] = params["_meta"]
    version = request.headers.get(VERSION_HEADER)
    if version is None or version != meta[PROTOCOL_VERSION_META_KEY]:
        return McpError(
            HEADER_MISMATCH, f"{VERSION_HEADER} header does not match the request envelope's protocol version"
        )
    if request.headers.get(METHOD_HEADER) != method:
        return McpError(HEADER_MISMATCH, f"{METHOD_HEADER} header does not match the request body's method")
    name_key = _NAME_BEARING.get(method)
    if name_key is not None:
        body_value = params.get(name_key)
        if body_value is not None and _decoded(request.headers.get(NAME_HEADER)) != body_value:
            return McpError(
                HEADER_MISMATCH, f"{NAME_HEADER} header does not match the request body's {name_key!r} parameter"
            )
    return None


def _decoded(value: str | None) -> str | None:
    """A header value with the ``=?base64?…?=`` sentinel decoded; a malformed or non-canonical one is ``None``."""
    if value is None or not (value.startswith(_B64_PREFIX) and value.endswith(_B64_SUFFIX)):
        return value
    payload = value[len(_B64_PREFIX) : -len(_B64_SUFFIX)]
    try:
        decoded = base64.b64decode(payload, validate=True)
        if base64.b64encode(decoded).decode("ascii") != payload:
            return None
        return decoded.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
