"""Bench-only minimal ACP agent, stdlib only: ``python _minimal_agent.py MODE [N]``.

Modes: ``echo`` answers a prompt with its text as one ``agent_message_chunk`` and ``end_turn``; ``stream N`` sends
``N`` one-character chunks first; ``hang`` holds the prompt until ``session/cancel`` and answers ``cancelled``;
``trap`` holds it forever and ignores ``session/cancel``, stdin EOF and SIGTERM (only SIGKILL ends it). Every other
mode exits 0 on stdin EOF.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time


def stream_lines(session_id: str, count: int) -> bytes:
    """The ``session/update`` lines of ``count`` one-character ``agent_message_chunk`` updates."""
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}
    line = json.dumps(
        {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": update}},
        separators=(",", ":"),
    ).encode()
    return (line + b"\n") * count


def _write(data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(1, view) :]


def _send(message: dict[str, object]) -> None:
    _write(json.dumps(message, separators=(",", ":")).encode() + b"\n")


def main() -> None:
    mode = sys.argv[1]
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    if mode == "trap":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    held: object = None
    for raw in sys.stdin.buffer:
        message = json.loads(raw)
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize":
            _send({"jsonrpc": "2.0", "id": request_id, "result": {"protocolVersion": 1, "agentCapabilities": {}}})
        elif method == "session/new":
            _send({"jsonrpc": "2.0", "id": request_id, "result": {"sessionId": "bench"}})
        elif method == "session/prompt":
            if mode in ("hang", "trap"):
                held = request_id
                continue
            if mode == "stream":
                _write(stream_lines("bench", count))
            else:
                text = "".join(block.get("text", "") for block in message["params"]["prompt"])
                _write(stream_lines("bench", 1).replace(b'"text":"x"', json.dumps({"text": text})[1:-1].encode()))
            _send({"jsonrpc": "2.0", "id": request_id, "result": {"stopReason": "end_turn"}})
        elif method == "session/cancel" and mode == "hang" and held is not None:
            _send({"jsonrpc": "2.0", "id": held, "result": {"stopReason": "cancelled"}})
            held = None
    while mode == "trap":
        time.sleep(60)


if __name__ == "__main__":
    main()
