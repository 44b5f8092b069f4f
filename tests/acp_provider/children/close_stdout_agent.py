"""Test child: a minimal ACP agent that answers the handshake, then closes stdout on ``session/prompt`` and stays
alive until stdin reaches EOF (the connection ends while the process lives)."""

from __future__ import annotations

import json
import os
import sys


def _send(message: dict[str, object]) -> None:
    os.write(1, (json.dumps(message) + "\n").encode())


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        if method == "initialize":
            _send({"jsonrpc": "2.0", "id": message["id"], "result": {"protocolVersion": 1}})
        elif method == "session/new":
            _send({"jsonrpc": "2.0", "id": message["id"], "result": {"sessionId": "s"}})
        elif method == "session/prompt":
            os.close(1)
    # stdin EOF: the host's ladder asked us to leave.


if __name__ == "__main__":
    main()
