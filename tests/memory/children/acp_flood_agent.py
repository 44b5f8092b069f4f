"""A stdlib ACP agent that answers the prompt with an endless flood of 1 MiB ``agent_message_chunk`` texts.

It writes until ``FLOOD_MIB`` MiB were sent (default 1024) or its stdout closes, and never ends the turn itself.
"""

from __future__ import annotations

import json
import os
import sys

CHUNK = "x" * (1 << 20)


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main() -> None:
    total = int(os.environ.get("FLOOD_MIB", "1024"))
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
            update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": CHUNK}}
            line_out = (
                json.dumps(
                    {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "flood", "update": update}}
                )
                + "\n"
            )
            try:
                for _ in range(total):
                    sys.stdout.write(line_out)
                sys.stdout.flush()
            except BrokenPipeError:
                return
            send({"jsonrpc": "2.0", "id": request_id, "result": {"stopReason": "end_turn"}})


if __name__ == "__main__":
    main()
