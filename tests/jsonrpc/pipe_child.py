"""Stdlib-only JSON-RPC child for the peer's real-pipe tests; behaviour is chosen per request method.

``echo`` answers with its params; ``notify_then_answer`` writes a notification, then the answer; ``ask`` sends the
host a request and answers with the host's reply; ``close_stdin`` closes fd 0, announces ``stdin_closed`` and
sleeps until killed; ``exit`` exits without answering.
"""

from __future__ import annotations

import json
import os
import sys
import time


def _write(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        request_id = message.get("id")
        params = message.get("params", {})
        if method == "echo":
            _write({"jsonrpc": "2.0", "id": request_id, "result": params})
        elif method == "notify_then_answer":
            _write({"jsonrpc": "2.0", "method": "progress", "params": {"step": 1}})
            _write({"jsonrpc": "2.0", "id": request_id, "result": "done"})
        elif method == "ask":
            _write({"jsonrpc": "2.0", "id": "child-1", "method": "host/question", "params": params})
            reply = json.loads(sys.stdin.readline())
            _write({"jsonrpc": "2.0", "id": request_id, "result": reply})
        elif method == "close_stdin":
            os.close(0)
            _write({"jsonrpc": "2.0", "method": "stdin_closed"})
            time.sleep(60)
            return
        elif method == "exit":
            return


if __name__ == "__main__":
    main()
