"""Test child: a small ACP agent for the operator CLI tests, one behaviour per mode (``argv[1]``); stdlib only.

Modes: ``auth`` (``session/new`` answers auth-required), ``noisy`` (streams ``partial text``, then a long non-JSON
line, then finishes), ``escape`` (streams terminal control sequences), ``info`` (describes itself in
``initialize``), ``env NAME…`` (answers with the names of ``NAME…`` that are set in its environment).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

_MODE = sys.argv[1]


def _send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _chunk(session_id: str, text: str) -> None:
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    _send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": update}})


def _answer_prompt(request_id: object) -> None:
    if _MODE == "noisy":
        _chunk("s", "partial text")
        sys.stdout.write("not json " + "y" * 300 + "\n")
        sys.stdout.flush()
        _chunk("s", " more\n")
    elif _MODE == "escape":
        _chunk("s", "a\x1b]52;c;aGk=\x07b\x1b[2Jc\x9b31m\rd\tz\n")
    elif _MODE == "env":
        present = [name for name in sys.argv[2:] if name in os.environ]
        _chunk("s", "present: " + ",".join(present) + "\n")
    else:
        _chunk("s", "ok\n")
    _send({"jsonrpc": "2.0", "id": request_id, "result": {"stopReason": "end_turn"}})


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize":
            result: dict[str, Any] = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
            if _MODE == "info":
                result["agentInfo"] = {"name": "op-agent", "version": "9.9"}
                result["authMethods"] = [{"id": "login", "name": "Log in"}]
            _send({"jsonrpc": "2.0", "id": request_id, "result": result})
        elif method == "session/new":
            if _MODE == "auth":
                error = {"code": -32000, "message": "Authentication required"}
                _send({"jsonrpc": "2.0", "id": request_id, "error": error})
            else:
                _send({"jsonrpc": "2.0", "id": request_id, "result": {"sessionId": "s"}})
        elif method == "session/prompt":
            _answer_prompt(request_id)


if __name__ == "__main__":
    main()
