"""Test child: a minimal ACP agent that answers one request with a JSON-RPC error carrying planted secrets.

``argv[1]`` is ``<method>:<code>``, e.g. ``session/new:-32603`` or ``session/prompt:-32000``. It also writes the
secrets to its (inherited) stderr. Before a failing prompt it streams one chunk ``partial``. It exits on stdin EOF.
"""

from __future__ import annotations

import json
import os
import sys

_SECRET = "SECRET_TOKEN at /private/path"


def _send(message: dict[str, object]) -> None:
    os.write(1, (json.dumps(message) + "\n").encode())


def main() -> None:
    method, code = sys.argv[1].rsplit(":", 1)
    os.write(2, f"agent stderr: {_SECRET}\n".encode())
    for line in sys.stdin:
        message = json.loads(line)
        name, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue
        if name == method:
            if name == "session/prompt":
                chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "partial"}}
                _send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": chunk}})
            error = {"code": int(code), "message": _SECRET, "data": {"path": "/private/path"}}
            _send({"jsonrpc": "2.0", "id": request_id, "error": error})
        elif name == "initialize":
            _send({"jsonrpc": "2.0", "id": request_id, "result": {"protocolVersion": 1}})
        elif name == "session/new":
            _send({"jsonrpc": "2.0", "id": request_id, "result": {"sessionId": "s"}})
        elif name == "session/prompt":
            _send({"jsonrpc": "2.0", "id": request_id, "result": {"stopReason": "end_turn"}})


if __name__ == "__main__":
    main()
