"""Strict JSON-RPC 2.0 envelope checks, for a peer that answers malformed input instead of skipping it.

A server whose clients wait on every id (the MCP server) must answer what it cannot use: a line that is not UTF-8 or
not one standard JSON value gets ``-32700`` with id null; a JSON value that is not a valid request gets ``-32600``
(with its id when it has a usable one, else null). A notification or a response that does not validate has nobody
to answer and is dropped. The ACP and SDK clients keep the lenient default (skip and log).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, Final, Literal, TypeAlias, cast

from host._exceptions import ResponseError
from host.jsonrpc._framing import RequestId

__all__ = [
    "outbound_message",
    "INVALID_REQUEST_CODE",
    "PARSE_ERROR_CODE",
    "ErrorReply",
    "Rejection",
    "error_response",
    "handler_failure_to_wire",
    "reject_line",
    "reject_message",
    "response_error",
]

logger = logging.getLogger("host.jsonrpc._peer")

PARSE_ERROR_CODE: Final = -32700
INVALID_REQUEST_CODE: Final = -32600

Rejection: TypeAlias = tuple[RequestId | None, int, str] | Literal["drop"]
"""What to do with an unusable message: answer ``(id, code, message)``, or drop it."""


class ErrorReply(Exception):
    """Raised by a request handler to answer with this JSON-RPC ``error`` (``code``, a fixed ``message``, ``data``).

    The message goes on the wire as it is: it must never carry exception text or peer-controlled text.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_wire(self) -> dict[str, Any]:
        """The ``error`` member."""
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


INTERNAL_ERROR_CODE: Final = -32603
INTERNAL_ERROR_MESSAGE: Final = "Internal error"
# Default `message` of an `error` member that has none (docs/behaviour.md#sdk-wire-framing).
DEFAULT_ERROR_MESSAGE: Final = "JSON-RPC error"


def response_error(error: object) -> ResponseError:
    """Map a response's ``error`` member leniently: bad ``code`` → ``None``, bad ``message`` → the default."""
    if not isinstance(error, dict):
        return ResponseError(None, DEFAULT_ERROR_MESSAGE)
    fields = cast("dict[str, object]", error)
    code = fields.get("code")
    message = fields.get("message")
    return ResponseError(
        code if type(code) is int else None,
        message if isinstance(message, str) else DEFAULT_ERROR_MESSAGE,
        fields.get("data"),
    )


def error_response(request_id: RequestId, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def handler_failure_to_wire(request_id: RequestId, method: str) -> dict[str, Any]:
    """The one mapping of a failed inbound request to the wire: ``-32603`` with no traceback and no ``data``.

    Must be called from an ``except`` block; the exception goes to the host log only.
    """
    logger.exception("handler for inbound JSON-RPC request %r failed", method)
    return error_response(request_id, INTERNAL_ERROR_CODE, INTERNAL_ERROR_MESSAGE)


def _reject_constant(name: str) -> object:
    raise ValueError(f"non-standard JSON constant {name}")


_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant)


def reject_line(line: bytes | bytearray) -> Rejection:
    """The answer to a line the lenient parser skipped: ``-32700`` unless it was blank or a JSON non-object."""
    try:
        text = line.decode("utf-8").strip()
        if not text:
            return "drop"
        value, end = _DECODER.raw_decode(text)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return (None, PARSE_ERROR_CODE, "Parse error")
    if end != len(text):
        return (None, PARSE_ERROR_CODE, "Parse error")
    del value
    return (None, INVALID_REQUEST_CODE, "Invalid Request")


def _usable_id(request_id: object) -> RequestId | None:
    # A bool is never an id: True would alias request id 1.
    if type(request_id) is int or type(request_id) is str:
        return request_id
    return None


def reject_message(message: dict[str, Any]) -> Rejection | None:
    """``None`` for a valid request, notification or response; else how to answer it."""
    has_method = "method" in message
    has_id = "id" in message
    request_id = message.get("id")
    if has_method:
        valid = (
            message.get("jsonrpc") == "2.0"
            and type(message["method"]) is str
            and ("params" not in message or type(message["params"]) is dict)
            and (not has_id or _usable_id(request_id) is not None)
        )
        if valid:
            return None
        return "drop" if not has_id else (_usable_id(request_id), INVALID_REQUEST_CODE, "Invalid Request")
    is_response = "result" in message or "error" in message
    if is_response:
        valid = message.get("jsonrpc") == "2.0" and _usable_id(request_id) is not None
        valid = valid and (("result" in message) != ("error" in message))
        return None if valid else "drop"
    return (_usable_id(request_id), INVALID_REQUEST_CODE, "Invalid Request")


def outbound_message(request_id: RequestId | None, method: str, params: Mapping[str, object] | None) -> dict[str, Any]:
    """A request (``request_id`` given) or notification as its JSON-RPC object."""
    message: dict[str, Any] = {"jsonrpc": "2.0"}
    if request_id is not None:
        message["id"] = request_id
    message["method"] = method
    # Never "params": null (docs/behaviour.md#acp-wire-framing, docs/behaviour.md#sdk-wire-framing).
    if params is not None:
        message["params"] = params if isinstance(params, dict) else dict(params)
    return message
