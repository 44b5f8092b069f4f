"""A stdlib DSH SDK runtime that answers the prompt's turn with a flood of 1 MiB root-session events.

``FLOOD_KIND`` picks the event: ``reasoning`` (an ``assistant/message`` holding one 1 MiB reasoning block, each on a
new step), ``tool`` (an ``assistant/message`` holding one tool-call block with a 1 MiB input, each on a new step) or
``dropped`` (a ``reasoning-delta`` ``assistant/chunk`` and an unknown ``tool/update`` event, both of which the host
drops). It answers the prompt right after the receipt (so nothing waits in the host's pre-receipt queue); after
``FLOOD_MIB`` MiB (default 1024) it answers ``flood over``, ends the turn and goes idle; it exits at ``shutdown``
or stdin EOF.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

CHUNK = "x" * (1 << 20)
_eof = threading.Event()
_lines: list[str] = []
_ready = threading.Condition()


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def event(sid: str, seq: int, event_type: str, data: dict[str, Any]) -> dict[str, Any]:
    return {
        "method": "session.event",
        "params": {"sessionId": sid, "event": {"type": event_type, "seq": seq, "time": 0, "data": data}},
    }


def flood_events(kind: str, sid: str, step: int) -> list[dict[str, Any]]:
    if kind == "reasoning":
        message = {"id": f"m{step}", "role": "assistant", "content": [{"type": "reasoning", "text": CHUNK}]}
        return [event(sid, step, "assistant/message", {"turn": 0, "step": step, "message": message})]
    if kind == "tool":
        block = {"type": "tool-call", "id": f"t{step}", "name": "flood", "input": {"data": CHUNK}}
        message = {"id": f"m{step}", "role": "assistant", "content": [block]}
        return [event(sid, step, "assistant/message", {"turn": 0, "step": step, "message": message})]
    half = CHUNK[: len(CHUNK) // 2]
    thought = {"turn": 0, "step": 0, "chunk": {"type": "reasoning-delta", "index": 0, "text": half}}
    return [event(sid, step, "assistant/chunk", thought), event(sid, step, "tool/update", {"output": half})]


def prompt(request_id: object, sid: str) -> None:
    total = int(os.environ.get("FLOOD_MIB", "1024"))
    kind = os.environ.get("FLOOD_KIND", "reasoning")
    inserted: list[dict[str, Any]] = [{"id": "user-1", "role": "user", "content": [], "source": {"kind": "user"}}]
    send(event(sid, 0, "agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": inserted}))
    send({"method": "session.status", "params": {"sessionId": sid, "status": "running"}})
    send({"id": request_id, "result": {"messageId": "user-1"}})
    send(event(sid, 0, "turn/start", {"turn": 0}))
    for step in range(1, total + 1):
        if _eof.is_set():
            os._exit(0)
        for message in flood_events(kind, sid, step):
            send(message)
    over = {"turn": 0, "step": 0, "chunk": {"type": "text-delta", "index": 0, "text": "flood over"}}
    send(event(sid, total + 1, "assistant/chunk", over))
    send(event(sid, total + 2, "turn/end", {"turn": 0, "reason": {"kind": "completed"}}))
    send({"method": "session.status", "params": {"sessionId": sid, "status": "idle"}})


def read_stdin() -> None:
    for line in sys.stdin:
        with _ready:
            _lines.append(line)
            _ready.notify()
    _eof.set()
    with _ready:
        _ready.notify()


def main() -> None:
    threading.Thread(target=read_stdin, daemon=True).start()
    while True:
        with _ready:
            while not _lines and not _eof.is_set():
                _ready.wait()
            if not _lines:
                os._exit(0)
            line = _lines.pop(0)
        request = json.loads(line)
        method, request_id = request.get("method"), request.get("id")
        try:
            if method == "initialize":
                send({"id": request_id, "result": {"serverInfo": {"name": "flood", "version": "0"}}})
            elif method == "session/prompt":
                prompt(request_id, request["params"]["sessionId"])
            elif method == "shutdown":
                send({"id": request_id, "result": {}})
                os._exit(0)
        except BrokenPipeError:
            os._exit(0)


if __name__ == "__main__":
    main()
