"""The built-in ``echo`` agent: a stand-alone ACP v1 child that answers a prompt with the prompt's own text.

Run as a script (``[sys.executable, "-I", "-S", <this file>]``); it imports only the standard library and reads no
environment variable, so nothing in the host's environment can script it. It speaks newline-delimited JSON-RPC 2.0
on stdin/stdout: ``initialize`` and ``session/new`` are answered, a ``session/prompt`` gets its concatenated text
blocks back as one ``agent_message_chunk`` and then ``end_turn``, ``session/resume`` of an id it minted (the shape
``echo-<32 hex>``) succeeds (an echo has no context to lose, so a session continues across processes), any other
request gets "Method not found", and stdin EOF exits 0. Lines are split in linear time, so a task of tens of MiB
costs one pass over its bytes.

It starts on every run of the built-in provider, so at run time it imports only ``json`` and ``os`` (``typing`` is
the type checker's alone), and it exits without interpreter teardown: everything it says is written unbuffered.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING's value, without importing typing at run time
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Final, cast
else:

    def cast(_type: object, value: object) -> object:
        return value


JsonObject = dict[str, object]

_READ_SIZE: Final = 1 << 20
_METHOD_NOT_FOUND: Final = -32601
_RESOURCE_NOT_FOUND: Final = -32002
_AGENT_CAPABILITIES: Final[JsonObject] = {
    "promptCapabilities": {"image": False, "audio": False, "embeddedContext": False},
    "sessionCapabilities": {"resume": {}},
}
_HEX: Final = frozenset("0123456789abcdef")


def _lines(fd: int) -> Iterator[bytes]:
    """Yield each line read from ``fd`` without its newline (and a final unterminated one); each byte copied once."""
    parts: list[bytes] = []
    while data := os.read(fd, _READ_SIZE):
        start = 0
        while (newline := data.find(b"\n", start)) >= 0:
            parts.append(data[start:newline])
            yield b"".join(parts)
            parts.clear()
            start = newline + 1
        if start < len(data):
            parts.append(data[start:])
    if parts:
        yield b"".join(parts)


def _send(message: JsonObject) -> None:
    data = memoryview((json.dumps({"jsonrpc": "2.0", **message}, separators=(",", ":")) + "\n").encode())
    while data:
        data = data[os.write(1, data) :]


def _prompt_text(prompt: object) -> str:
    if not isinstance(prompt, list):
        return ""
    parts: list[str] = []
    for block in cast("list[object]", prompt):
        if isinstance(block, dict):
            typed = cast(JsonObject, block)
            text = typed.get("text")
            if typed.get("type") == "text" and isinstance(text, str):
                parts.append(text)
    return "".join(parts)


def _is_echo_session(session_id: object) -> bool:
    return (
        isinstance(session_id, str)
        and len(session_id) == 37
        and session_id.startswith("echo-")
        and _HEX.issuperset(session_id[5:])
    )


def _answer(request_id: object, method: str, params: JsonObject) -> None:
    if method == "initialize":
        result: JsonObject = {"protocolVersion": 1, "agentCapabilities": _AGENT_CAPABILITIES, "authMethods": []}
    elif method == "session/new":
        result = {"sessionId": f"echo-{os.urandom(16).hex()}"}
    elif method == "session/resume":
        if not _is_echo_session(params.get("sessionId")):
            _send({"id": request_id, "error": {"code": _RESOURCE_NOT_FOUND, "message": "Session not found"}})
            return
        result = {}
    elif method == "session/prompt":
        session_id = params.get("sessionId")
        content = {"type": "text", "text": _prompt_text(params.get("prompt"))}
        chunk = {"sessionUpdate": "agent_message_chunk", "content": content}
        _send({"method": "session/update", "params": {"sessionId": session_id, "update": chunk}})
        result = {"stopReason": "end_turn"}
    else:
        _send({"id": request_id, "error": {"code": _METHOD_NOT_FOUND, "message": "Method not found"}})
        return
    _send({"id": request_id, "result": result})


def main() -> None:
    """Serve until stdin EOF; notifications, responses and lines that are not JSON objects are ignored."""
    for line in _lines(0):
        try:
            message: object = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict):
            continue
        typed = cast(JsonObject, message)
        method, params = typed.get("method"), typed.get("params")
        if isinstance(method, str) and "id" in typed:
            _answer(typed["id"], method, cast(JsonObject, params) if isinstance(params, dict) else {})


if __name__ == "__main__":
    main()
    os._exit(0)  # stdin ended and every answer is written: nothing is left for interpreter teardown
