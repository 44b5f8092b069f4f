"""ACP v1 schema oracle for tests: validate wire messages against the official ``agent-client-protocol`` models.

The oracle is stricter than the SDK's own (deliberately lenient) decoding: a message passes only if its JSON-RPC
envelope is exact and its payload survives a model round trip unchanged, so a value the SDK would salvage (an
unknown tool kind), coerce (``"1"`` for ``1``) or drop (an unknown field) is a violation. Every violation raises
``AssertionError`` naming the method and the problem. ``WireRecorder`` tees byte streams into decoded messages.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final, cast

from acp import schema
from anyio.abc import ByteReceiveStream, ByteSendStream
from pydantic import BaseModel, ValidationError

CLIENT_REQUEST_MODELS: Final[Mapping[str, type[BaseModel]]] = {
    "initialize": schema.InitializeRequest,
    "authenticate": schema.AuthenticateRequest,
    "session/new": schema.NewSessionRequest,
    "session/prompt": schema.PromptRequest,
    "session/resume": schema.ResumeSessionRequest,
    "session/load": schema.LoadSessionRequest,
    "session/close": schema.CloseSessionRequest,
    "session/fork": schema.ForkSessionRequest,
}
"""Requests a client may send, by method, with the params model each must satisfy."""

CLIENT_NOTIFICATION_MODELS: Final[Mapping[str, type[BaseModel]]] = {"session/cancel": schema.CancelNotification}

AGENT_RESPONSE_MODELS: Final[Mapping[str, type[BaseModel]]] = {
    "initialize": schema.InitializeResponse,
    "authenticate": schema.AuthenticateResponse,
    "session/new": schema.NewSessionResponse,
    "session/prompt": schema.PromptResponse,
    "session/resume": schema.ResumeSessionResponse,
    "session/load": schema.LoadSessionResponse,
    "session/close": schema.CloseSessionResponse,
    "session/fork": schema.ForkSessionResponse,
}
"""The result model of an agent's answer, by the method of the request it answers."""

AGENT_REQUEST_MODELS: Final[Mapping[str, type[BaseModel]]] = {
    "session/request_permission": schema.RequestPermissionRequest,
    "fs/read_text_file": schema.ReadTextFileRequest,
    "fs/write_text_file": schema.WriteTextFileRequest,
    "terminal/create": schema.CreateTerminalRequest,
    "terminal/output": schema.TerminalOutputRequest,
    "terminal/release": schema.ReleaseTerminalRequest,
    "terminal/wait_for_exit": schema.WaitForTerminalExitRequest,
    "terminal/kill": schema.KillTerminalRequest,
}

AGENT_NOTIFICATION_MODELS: Final[Mapping[str, type[BaseModel]]] = {"session/update": schema.SessionNotification}

CLIENT_RESPONSE_MODELS: Final[Mapping[str, type[BaseModel]]] = {
    "session/request_permission": schema.RequestPermissionResponse,
}
"""The only agent request a client answers with a ``result``; every other one gets an ``error``."""

_REQUEST_KEYS: Final = frozenset({"jsonrpc", "id", "method", "params"})
_NOTIFICATION_KEYS: Final = frozenset({"jsonrpc", "method", "params"})


def _canonical(value: object) -> str:
    # sort_keys + the JSON spelling keep True apart from 1 and 1.0 apart from 1, which == would conflate.
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _fail(side: str, what: str, problem: str) -> AssertionError:
    return AssertionError(f"ACP {side} message {what}: {problem}")


def _check_model(model: type[BaseModel], payload: object, *, side: str, what: str) -> None:
    try:
        parsed = model.model_validate(payload)
    except ValidationError as exc:
        raise _fail(side, what, f"does not validate as {model.__name__}: {exc}") from None
    round_trip = parsed.model_dump(mode="json", by_alias=True, exclude_unset=True)
    if _canonical(round_trip) != _canonical(payload):
        raise _fail(
            side,
            what,
            f"{model.__name__} does not round-trip unchanged (salvaged, coerced or unknown fields): "
            f"sent {_canonical(payload)}, schema reads {_canonical(round_trip)}",
        )


def _check_id(value: object, *, side: str, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise _fail(side, what, f"id must be an integer or a string, got {value!r}")


def _check_envelope(msg: Mapping[str, object], *, side: str) -> str:
    """Check the JSON-RPC 2.0 envelope; return the message kind: request, notification or response."""
    if not isinstance(cast(object, msg), Mapping):
        raise _fail(side, "envelope", f"not a JSON object: {msg!r}")
    if msg.get("jsonrpc") != "2.0":
        raise _fail(side, "envelope", f'"jsonrpc" must be "2.0", got {msg.get("jsonrpc")!r}')
    if "params" in msg and msg["params"] is None:
        raise _fail(side, "envelope", '"params": null is never emitted')
    method = msg.get("method")
    if "method" in msg:
        if not isinstance(method, str):
            raise _fail(side, "envelope", f"method must be a string, got {method!r}")
        if "params" in msg and not isinstance(msg["params"], dict):
            raise _fail(side, method, "params must be an object")
        allowed = _REQUEST_KEYS if "id" in msg else _NOTIFICATION_KEYS
        extra = sorted(set(msg) - allowed)
        if extra:
            raise _fail(side, method, f"unexpected envelope keys {extra}")
        if "id" in msg:
            _check_id(msg["id"], side=side, what=method)
            return "request"
        return "notification"
    if "id" not in msg:
        raise _fail(side, "envelope", f"neither a request, a notification nor a response: {msg!r}")
    _check_id(msg["id"], side=side, what="response")
    if ("result" in msg) == ("error" in msg):
        raise _fail(side, "response", 'needs exactly one of "result" and "error"')
    extra = sorted(set(msg) - {"jsonrpc", "id", "result", "error"})
    if extra:
        raise _fail(side, "response", f"unexpected envelope keys {extra}")
    return "response"


def _params(msg: Mapping[str, object]) -> object:
    return msg.get("params", {})


def _check_method(
    msg: Mapping[str, object],
    models: Mapping[str, type[BaseModel]],
    *,
    side: str,
    kind: str,
    allow_extensions: bool,
) -> None:
    method = cast(str, msg["method"])
    model = models.get(method)
    if model is not None:
        _check_model(model, _params(msg), side=side, what=method)
    elif not (allow_extensions and method.startswith("_")):
        raise _fail(side, method, f"is not an ACP v1 {kind} a {side} sends (known: {sorted(models)})")


def _check_error(msg: Mapping[str, object], *, side: str) -> None:
    _check_model(schema.Error, msg["error"], side=side, what="error response")


def validate_client_message(
    msg: Mapping[str, object], *, answered_method: str | None = None, allow_extensions: bool = False
) -> None:
    """Assert that ``msg`` is a schema-valid message from an ACP client (our host) to an agent.

    Args:
        msg: one decoded JSON-RPC message.
        answered_method: for a response, the method of the agent request it answers, when known; a ``result``
            is accepted only for ``session/request_permission`` (the default assumption).
        allow_extensions: accept ``_``-prefixed extension methods with any params.

    Raises:
        AssertionError: the message violates the envelope or the ACP schema.
    """
    side = "client"
    kind = _check_envelope(msg, side=side)
    if kind == "request":
        _check_method(msg, CLIENT_REQUEST_MODELS, side=side, kind="request", allow_extensions=allow_extensions)
    elif kind == "notification":
        _check_method(
            msg, CLIENT_NOTIFICATION_MODELS, side=side, kind="notification", allow_extensions=allow_extensions
        )
    elif "error" in msg:
        _check_error(msg, side=side)
    else:
        method = answered_method or "session/request_permission"
        model = CLIENT_RESPONSE_MODELS.get(method)
        if model is None:
            raise _fail(side, "response", f"a client answers {method!r} only with an error")
        _check_model(model, msg["result"], side=side, what=f"response to {method}")


def validate_agent_message(
    msg: Mapping[str, object], *, request_method: str | None = None, allow_extensions: bool = False
) -> None:
    """Assert that ``msg`` is a schema-valid message from an ACP agent to a client.

    Args:
        msg: one decoded JSON-RPC message.
        request_method: for a response with a ``result``, the method of the client request it answers.
        allow_extensions: accept ``_``-prefixed extension methods with any params.

    Raises:
        AssertionError: the message violates the envelope or the ACP schema, or a ``result`` arrives without
            ``request_method``.
    """
    side = "agent"
    kind = _check_envelope(msg, side=side)
    if kind == "request":
        _check_method(msg, AGENT_REQUEST_MODELS, side=side, kind="request", allow_extensions=allow_extensions)
    elif kind == "notification":
        _check_method(msg, AGENT_NOTIFICATION_MODELS, side=side, kind="notification", allow_extensions=allow_extensions)
    elif "error" in msg:
        _check_error(msg, side=side)
    else:
        if request_method is None:
            raise _fail(side, "response", "validating a result needs request_method (the method it answers)")
        model = AGENT_RESPONSE_MODELS.get(request_method)
        if model is None:
            raise _fail(side, "response", f"no ACP v1 result model for {request_method!r}")
        _check_model(model, msg["result"], side=side, what=f"response to {request_method}")


def _request_methods(messages: Iterable[Mapping[str, object]]) -> dict[object, str]:
    methods: dict[object, str] = {}
    for msg in messages:
        method = msg.get("method")
        if isinstance(method, str) and "id" in msg:
            methods[msg["id"]] = method
    return methods


def validate_conversation(
    client_messages: Iterable[Mapping[str, object]],
    agent_messages: Iterable[Mapping[str, object]],
    *,
    allow_extensions: bool = False,
) -> None:
    """Validate both directions of one connection, matching each response to the request it answers by id.

    Raises:
        AssertionError: a message is invalid, or a response answers no request of the other side.
    """
    client_list = list(client_messages)
    agent_list = list(agent_messages)
    client_requests = _request_methods(client_list)
    agent_requests = _request_methods(agent_list)
    for msg in client_list:
        answered = None if "method" in msg else agent_requests.get(msg.get("id"))
        if "method" not in msg and answered is None:
            raise _fail("client", "response", f"answers no agent request: {msg!r}")
        validate_client_message(msg, answered_method=answered, allow_extensions=allow_extensions)
    for msg in agent_list:
        answered = None if "method" in msg else client_requests.get(msg.get("id"))
        if "method" not in msg and answered is None:
            raise _fail("agent", "response", f"answers no client request: {msg!r}")
        validate_agent_message(msg, request_method=answered, allow_extensions=allow_extensions)


class WireRecorder:
    """Decode newline-delimited JSON-RPC bytes into messages as they pass through a tee.

    Wrap a process handle's pipes with ``tee_send`` / ``tee_receive`` and read ``messages`` afterwards. Lines that
    are not JSON objects land in ``undecodable``; a trailing partial line stays buffered.
    """

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.undecodable: list[bytes] = []
        self._buffer = bytearray()
        self._scanned = 0

    def feed(self, data: bytes) -> None:
        """Append raw bytes; every completed line is decoded into ``messages``."""
        self._buffer += data
        while True:
            # Resume the newline scan where the last one stopped: a 40 MiB line arrives in thousands of reads.
            end = self._buffer.find(b"\n", self._scanned)
            if end < 0:
                self._scanned = len(self._buffer)
                return
            line = bytes(self._buffer[:end])
            del self._buffer[: end + 1]
            self._scanned = 0
            self._decode_line(line)

    def _decode_line(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            value: object = json.loads(line)
        except ValueError:
            self.undecodable.append(line)
            return
        if isinstance(value, dict):
            self.messages.append(cast(dict[str, Any], value))
        else:
            self.undecodable.append(line)

    def tee_send(self, stream: ByteSendStream) -> ByteSendStream:
        """Return a send stream that records every byte successfully sent through ``stream``."""
        return _TeeSendStream(stream, self)

    def tee_receive(self, stream: ByteReceiveStream) -> ByteReceiveStream:
        """Return a receive stream that records every byte received from ``stream``."""
        return _TeeReceiveStream(stream, self)


class _TeeSendStream(ByteSendStream):
    def __init__(self, inner: ByteSendStream, recorder: WireRecorder) -> None:
        self._inner = inner
        self._recorder = recorder

    async def send(self, item: bytes) -> None:
        await self._inner.send(item)
        self._recorder.feed(item)

    async def aclose(self) -> None:
        await self._inner.aclose()


class _TeeReceiveStream(ByteReceiveStream):
    def __init__(self, inner: ByteReceiveStream, recorder: WireRecorder) -> None:
        self._inner = inner
        self._recorder = recorder

    async def receive(self, max_bytes: int = 65536) -> bytes:
        data = await self._inner.receive(max_bytes)
        self._recorder.feed(data)
        return data

    async def aclose(self) -> None:
        await self._inner.aclose()


__all__ = [
    "AGENT_NOTIFICATION_MODELS",
    "AGENT_REQUEST_MODELS",
    "AGENT_RESPONSE_MODELS",
    "CLIENT_NOTIFICATION_MODELS",
    "CLIENT_REQUEST_MODELS",
    "CLIENT_RESPONSE_MODELS",
    "WireRecorder",
    "validate_agent_message",
    "validate_client_message",
    "validate_conversation",
]
