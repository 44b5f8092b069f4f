"""A stdlib ACP agent that answers the prompt with a flood of 1 MiB ``session/update`` notifications.

``FLOOD_KIND`` picks the update: ``text`` (default, ``agent_message_chunk``), ``thought`` (``agent_thought_chunk``),
``tool`` (``tool_call_update`` of one tool call whose title is 1 MiB) or ``plan`` (a ``plan`` update, which the host
drops). It writes until ``FLOOD_MIB`` MiB were sent (default 1024) or its stdout closes, then answers ``flood over``
and ends the turn.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping

CHUNK = "x" * (1 << 20)


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def send_update(update: Mapping[str, object]) -> None:
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "flood", "update": update}})


def update_of(kind: str) -> dict[str, object]:
    if kind == "thought":
        return {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": CHUNK}}
    if kind == "tool":
        return {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress", "title": CHUNK}
    if kind == "plan":
        return {"sessionUpdate": "plan", "entries": [{"content": CHUNK, "priority": "low", "status": "pending"}]}
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": CHUNK}}


def main() -> None:
    total = int(os.environ.get("FLOOD_MIB", "1024"))
    kind = os.environ.get("FLOOD_KIND", "text")
    for line in sys.stdin:
        request = json.loads(line)
        method, request_id = request.get("method"), request.get("id")
        if method == "initialize":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "result": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []},
                }
            )
        elif method == "session/new":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"sessionId": "flood"}})
        elif method == "session/prompt":
            params = {"sessionId": "flood", "update": update_of(kind)}
            line_out = json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": params}) + "\n"
            try:
                if kind == "tool":
                    start = {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "flood", "kind": "other"}
                    send_update(start)
                for _ in range(total):
                    sys.stdout.write(line_out)
                sys.stdout.flush()
                over = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "flood over"}}
                send_update(over)
                send({"jsonrpc": "2.0", "id": request_id, "result": {"stopReason": "end_turn"}})
            except BrokenPipeError:
                return


if __name__ == "__main__":
    main()
