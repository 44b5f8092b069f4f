"""A transparent stdio tap between the host and a real ACP agent: ``acp_wire_tap.py LOG -- AGENT ARGV...``.

It runs the agent with its stdin and stderr, relays every line the host writes to the agent's stdin unchanged, and
appends one JSON line per host-to-agent JSON-RPC message to ``LOG``: ``{"tap": <its pid>, "method", "id",
"sessionId"}`` (requests and notifications), or ``{"tap", "response": <id>}`` for the host's answers to the agent.
The agent's stdout is its own (inherited), so the tap adds nothing to the agent's side of the wire. When the host's
stdin ends the tap closes the agent's stdin; a SIGTERM is passed on; the tap exits with the agent's status.
Stdlib only: it runs as a real child with ``sys.executable``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from typing import Any, cast


def _entry(line: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict):
        return None
    fields = cast(dict[str, Any], message)
    entry: dict[str, Any] = {"tap": os.getpid()}
    if "method" in fields:
        params = fields.get("params")
        entry |= {"method": fields["method"], "id": fields.get("id")}
        entry["sessionId"] = cast(dict[str, Any], params).get("sessionId") if isinstance(params, dict) else None
    else:
        entry["response"] = fields.get("id")
    return entry


def main() -> int:
    log_path, separator, *agent = sys.argv[1:]
    assert separator == "--" and agent, "usage: acp_wire_tap.py LOG -- AGENT ARGV..."
    child = subprocess.Popen(agent, stdin=subprocess.PIPE)  # stdout and stderr: inherited, untouched
    signal.signal(signal.SIGTERM, lambda _signum, _frame: child.send_signal(signal.SIGTERM))
    assert child.stdin is not None
    agent_stdin = child.stdin

    def relay() -> None:
        with open(log_path, "a", encoding="utf-8") as log:
            for line in sys.stdin.buffer:
                entry = _entry(line)
                if entry is not None:
                    log.write(json.dumps(entry) + "\n")
                    log.flush()
                try:
                    agent_stdin.write(line)
                    agent_stdin.flush()
                except (BrokenPipeError, ValueError):
                    break
        try:
            agent_stdin.close()
        except BrokenPipeError:
            pass

    threading.Thread(target=relay, daemon=True).start()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
