"""Bench-only ACP agent: answers the handshake, then streams ``argv[1]`` one-character chunks and ``end_turn``.

``stream_lines(sid, n)`` is shared with the benchmark, so the raw-decoding baseline reads exactly the same bytes.
"""

from __future__ import annotations

import json
import os
import sys


def stream_lines(session_id: str, count: int) -> bytes:
    """The ``session/update`` lines of ``count`` one-character ``agent_message_chunk`` updates."""
    line = json.dumps(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {
                "sessionId": session_id,
                "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}},
            },
        },
        separators=(",", ":"),
    ).encode()
    return (line + b"\n") * count


def _send(message: dict[str, object]) -> None:
    os.write(1, json.dumps(message, separators=(",", ":")).encode() + b"\n")


def main() -> None:
    count = int(sys.argv[1])
    for raw in sys.stdin:
        message = json.loads(raw)
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize":
            _send({"jsonrpc": "2.0", "id": request_id, "result": {"protocolVersion": 1}})
        elif method == "session/new":
            _send({"jsonrpc": "2.0", "id": request_id, "result": {"sessionId": "bench"}})
        elif method == "session/prompt":
            blob = stream_lines("bench", count)
            view = memoryview(blob)
            while view:
                written = os.write(1, view)
                view = view[written:]
            _send({"jsonrpc": "2.0", "id": request_id, "result": {"stopReason": "end_turn"}})


if __name__ == "__main__":
    main()
