"""Validation of DSH SDK responses and root-session events, with the exact ``SdkProtocolError`` texts of
docs/behaviour.md#sdk-client-requests, #sdk-event-validation.

Everything here is pure and never trusts the peer: values are checked field by field, and a violation raises
``SdkProtocolError`` whose message embeds the offending JSON (host-only). Unknown event types and unknown
top-level turn-end kinds pass.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeGuard, cast

from host._exceptions import SdkProtocolError

__all__ = [
    "MAX_CONTENT_DEPTH",
    "RECEIPT_EVENT_TYPE",
    "ServerInfo",
    "compact_json",
    "is_receipt",
    "message_id_of",
    "server_info_of",
    "turn_end_reason",
    "validate_event",
]

RECEIPT_EVENT_TYPE: Final = "agent/inbox/spliced"
"""The session event that acknowledges a prompt: its ``data.inserted`` holds the prompt's ``messageId``."""

_NO_SERVER_IDENTITY: Final = "initialize returned no server identity: {json}"
_NO_MESSAGE_ID: Final = "session/prompt returned no message id: {json}"
_NO_ENVELOPE: Final = "session.event carried no event envelope: {json}"
_MALFORMED_CONTENT: Final = "assistant/message event carried malformed content: {json}"
_MALFORMED_CHUNK: Final = "assistant/chunk event carried a malformed chunk: {json}"
_MALFORMED_TURN_END: Final = "turn/end event carried malformed data: {json}"
_NO_REASON_ENVELOPE: Final = "turn/end carried no reason envelope: {json}"
_MALFORMED_ABORT: Final = "turn/end carried a malformed aborted reason: {json}"
_MALFORMED_HOOK_ABORT: Final = "turn/end carried a malformed hook abort reason: {json}"
_UNKNOWN_ABORT: Final = "turn/end carried an unknown abort reason: {json}"

_ABORT_CAUSES: Final = frozenset({"user", "parent", "disposed", "legacy", "hook"})

_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)

MAX_CONTENT_DEPTH: Final = 64
"""Deepest nesting of arrays and objects inside one content block of an ``assistant/message``.

The host keeps message content verbatim and later copies, validates and encodes it with recursive code, so a
block nested close to the interpreter's recursion limit would fail somewhere downstream depending on the caller's
stack depth. Rejecting it here makes the outcome a deterministic ``protocol`` failure.
"""
# Stands in for a value too deeply nested to encode in a host-only message.
_UNENCODABLE: Final = "<unencodable value>"


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """The runtime's identity from ``initialize`` (its name is not checked)."""

    name: str
    version: str


def compact_json(value: object) -> str:
    """``json.dumps(value, separators=(",", ":"), ensure_ascii=False)``; a missing value is ``null``."""
    try:
        return _ENCODER.encode(value)
    except RecursionError:
        # Peer JSON can parse yet nest too deeply to encode (or repr) within the remaining stack.
        return _UNENCODABLE
    except (TypeError, ValueError):
        # Parsed peer JSON always encodes; this only guards a caller passing something else.
        return _ENCODER.encode(repr(value))


def _is_object(value: object) -> TypeGuard[dict[str, Any]]:
    return type(value) is dict


def server_info_of(result: object) -> ServerInfo:
    """Validate an ``initialize`` result.

    Raises:
        SdkProtocolError: no object with string ``serverInfo.name`` and ``serverInfo.version``.
    """
    info = result.get("serverInfo") if _is_object(result) else None
    if _is_object(info):
        name, version = info.get("name"), info.get("version")
        if isinstance(name, str) and isinstance(version, str):
            return ServerInfo(name, version)
    raise SdkProtocolError(_NO_SERVER_IDENTITY.format(json=compact_json(result)))


def message_id_of(result: object) -> str:
    """Validate a ``session/prompt`` result and return its ``messageId`` (the enqueue receipt).

    Raises:
        SdkProtocolError: no object with a string ``messageId``.
    """
    message_id = result.get("messageId") if _is_object(result) else None
    if isinstance(message_id, str):
        return message_id
    raise SdkProtocolError(_NO_MESSAGE_ID.format(json=compact_json(result)))


def is_receipt(event: object, message_id: str) -> bool:
    """Whether ``event`` is the ``agent/inbox/spliced`` event that inserted ``message_id``."""
    if not _is_object(event) or event.get("type") != RECEIPT_EVENT_TYPE:
        return False
    data = event.get("data")
    inserted = data.get("inserted") if _is_object(data) else None
    if type(inserted) is not list:
        return False
    return any(_is_object(item) and item.get("id") == message_id for item in cast(list[object], inserted))


def validate_event(event: object) -> dict[str, Any]:
    """Validate one root-session event from the receipt on (docs/behaviour.md#sdk-event-validation) and return it.

    Raises:
        SdkProtocolError: the event violates the protocol; the message names the violation.
    """
    if not _is_object(event) or not isinstance(event.get("type"), str):
        raise SdkProtocolError(_NO_ENVELOPE.format(json=compact_json(event)))
    event_type = event["type"]
    if event_type == "assistant/message":
        _check_message(event)
    elif event_type == "assistant/chunk":
        _check_chunk(event)
    elif event_type == "turn/end":
        _check_turn_end(event)
    return event


def _check_message(event: dict[str, Any]) -> None:
    data = event.get("data")
    message = data.get("message") if _is_object(data) else None
    content = message.get("content") if _is_object(message) else None
    if type(content) is not list or not all(
        _is_object(block) and isinstance(block.get("type"), str) and _nested_within(block, MAX_CONTENT_DEPTH)
        for block in cast(list[object], content)
    ):
        raise SdkProtocolError(_MALFORMED_CONTENT.format(json=compact_json(event)))


def _nested_within(value: object, limit: int) -> bool:
    """Whether ``value`` nests arrays and objects at most ``limit`` levels deep (iterative: no recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if type(item) is dict:
            children: Iterable[object] = cast(dict[str, object], item).values()
        elif type(item) is list:
            children = cast(list[object], item)
        else:
            continue
        if depth > limit:
            return False
        stack.extend((child, depth + 1) for child in children)
    return True


def _check_chunk(event: dict[str, Any]) -> None:
    data = event.get("data")
    chunk = data.get("chunk") if _is_object(data) else None
    valid = (
        _is_object(chunk)
        and isinstance(chunk.get("type"), str)
        and (chunk["type"] != "text-delta" or isinstance(chunk.get("text"), str))
    )
    if not valid:
        raise SdkProtocolError(_MALFORMED_CHUNK.format(json=compact_json(event)))


def _check_turn_end(event: dict[str, Any]) -> None:
    data = event.get("data")
    if not _is_object(data):
        raise SdkProtocolError(_MALFORMED_TURN_END.format(json=compact_json(event)))
    reason = data.get("reason")
    if not _is_object(reason) or not isinstance(reason.get("kind"), str):
        raise SdkProtocolError(_NO_REASON_ENVELOPE.format(json=compact_json(reason)))
    if reason["kind"] != "aborted":
        return  # an unknown top-level kind passes; the provider maps it to child-unknown
    cause = reason.get("reason")
    if not _is_object(cause) or not isinstance(cause.get("kind"), str):
        raise SdkProtocolError(_MALFORMED_ABORT.format(json=compact_json(reason)))
    if cause["kind"] == "hook" and not isinstance(cause.get("reason"), str):
        raise SdkProtocolError(_MALFORMED_HOOK_ABORT.format(json=compact_json(reason)))
    if cause["kind"] not in _ABORT_CAUSES:
        raise SdkProtocolError(_UNKNOWN_ABORT.format(json=compact_json(reason)))


def turn_end_reason(event: Mapping[str, object]) -> Mapping[str, object] | None:
    """The ``data.reason`` of a validated ``turn/end`` event, else ``None``."""
    data = event.get("data")
    if not isinstance(data, Mapping):
        return None
    reason = cast(Mapping[str, object], data).get("reason")
    return cast(Mapping[str, object], reason) if isinstance(reason, Mapping) else None
