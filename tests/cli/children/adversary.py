"""Test child: a hostile ACP agent, one misbehaviour per mode (``argv[1]``, optional ``argv[2]``); stdlib only.

It answers the handshake like a plain agent (session id ``s``; our ids are 0, 1, 2) unless the mode says otherwise.
``ADV_DIR`` (required) receives ``ready`` when the mode reaches its interesting point, and ``pids`` (one pid a
line, written before ``ready``) for every descendant it spawned.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

_OUT = 1
_DIR = os.environ["ADV_DIR"]
_SLEEPER = "import signal, time\n{trap}while True:\n    time.sleep(3600)\n"


def _write_raw(data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(_OUT, view)
        view = view[written:]


def _send(message: dict[str, Any]) -> None:
    _write_raw((json.dumps(message) + "\n").encode())


def _result(request_id: object, result: object) -> None:
    _send({"jsonrpc": "2.0", "id": request_id, "result": result})


def _chunk(text: str, *, extra: dict[str, Any] | None = None) -> None:
    update: dict[str, Any] = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    if extra:
        update.update(extra)
    _send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": update}})


def _mark(name: str, text: str) -> None:
    path = os.path.join(_DIR, name)
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(path + ".tmp", path)


def _ready() -> None:
    _mark("ready", "ready")


def _spawn_sleeper(*, setsid: bool, trap_term: bool, keep_stdout: bool = False) -> int:
    trap = "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n" if trap_term else ""
    child = subprocess.Popen(
        [sys.executable, "-c", _SLEEPER.format(trap=trap)],
        stdin=subprocess.DEVNULL,
        stdout=None if keep_stdout else subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=setsid,
    )
    return child.pid


def _record_pids(pids: list[int]) -> None:
    _mark("pids", "".join(f"{pid}\n" for pid in pids))


def _hang() -> None:
    while True:
        time.sleep(3600)


def _ignore_signals() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _requests() -> Any:
    """Yield each request/notification the host writes, until stdin EOF."""
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            return
        yield json.loads(line)


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _on_prompt(mode: str, arg: str, request_id: object) -> bool:
    """Misbehave at ``session/prompt``; ``True`` when the mode answered (or abandoned) the prompt itself."""
    if mode == "garbage":
        for junk in (
            b"\x00\x01\x02\xff\xfe binary junk",
            b"\xed\xa0\x80 encoded surrogate \xc3\x28",
            b'{"jsonrpc":"2.0","id":2,"result":{"stopReason":NaN}}',
            b'{"jsonrpc":"2.0","method":"session/update","params":{"update":Infinity}}',
            b"[1, 2, 3]",
            b'"just a string"',
            b"   ",
            b'{"jsonrpc":"2.0","method":5,"id":3}',
            b'{"jsonrpc":"2.0"} trailing',
            b"{" * 10,
            b'{"jsonrpc":"2.0","id":2,"result":{"stopReason":"refusal"}',
        ):
            _write_raw(junk + b"\n")
        _chunk("ok")
        _result(request_id, {"stopReason": "end_turn"})
        return True
    if mode == "wrong_ids":
        for bad_id in (99, "2", True, 2.0, None, [2], {"id": 2}, -2, 10**30):
            _result(bad_id, {"stopReason": "refusal"})
        _send({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "result": {"stopReason": "refusal"}})
        _chunk("ok")
        _result(request_id, {"stopReason": "end_turn"})
        return True
    if mode == "duplicate_responses":
        _chunk("ok")
        _result(request_id, {"stopReason": "end_turn"})
        _result(request_id, {"stopReason": "refusal"})
        _send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32000, "message": "SECRET_TOKEN"}})
        return True
    if mode == "weird_request_ids":
        weird_ids: list[object] = [None, {}, [], 10**30, -1, 1.5, True, False, "x" * 5000, "", 0]
        for weird in weird_ids:
            _send({"jsonrpc": "2.0", "id": weird, "method": "fs/read_text_file", "params": {"path": "/private/path"}})
        _send({"jsonrpc": "2.0", "id": 7, "method": "session/request_permission", "params": [1, 2]})
        _send({"jsonrpc": "2.0", "id": 8, "method": "session/request_permission", "params": None})
        _send({"jsonrpc": "2.0", "id": 9, "method": "session/request_permission"})
        _mark("asked", "asked")
        _chunk("ok")
        _result(request_id, {"stopReason": "end_turn"})
        return True
    if mode == "odd_prompt_response":
        _chunk("ok")
        _write_raw(arg.replace("ID", json.dumps(request_id)).encode() + b"\n")
        return True
    if mode == "unknown_notifications":
        for method, params in (
            ("_vendor/thing", {"x": 1}),
            ("session/update", [1, 2]),
            ("session/update", {"update": "not an object"}),
            ("session/update", {"update": {"sessionUpdate": 7}}),
            ("session/update", {"update": {"sessionUpdate": "agent_message_chunk", "content": "text"}}),
            ("session/update", {"update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text"}}}),
            ("session/update", {"update": {"sessionUpdate": "agent_message_chunk", "content": {"text": 5}}}),
            ("session/update", {"update": {"sessionUpdate": "tool_call", "toolCallId": 5, "title": ["x"]}}),
            ("session/update", {"update": {"sessionUpdate": "tool_call_update", "content": 3, "rawInput": [1]}}),
            ("session/update", {"update": {"sessionUpdate": "agent_thought_chunk", "content": None}}),
            ("session/update", {"update": {"sessionUpdate": "plan", "entries": "x"}}),
            ("session/cancel", {"sessionId": "s"}),
            ("", {}),
        ):
            _send({"jsonrpc": "2.0", "method": method, "params": params})
        _chunk("ok")
        _result(request_id, {"stopReason": "end_turn"})
        return True
    if mode == "deep_nesting":
        depth = int(arg)
        meta = _nested(depth)
        update = '{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"deep"},"_meta":' + meta + "}"
        _write_raw(('{"jsonrpc":"2.0","method":"session/update","params":{"update":' + update + "}}\n").encode())
        tool = '{"sessionUpdate":"tool_call","toolCallId":"t","title":"t","kind":"read","rawInput":' + meta + "}"
        _write_raw(('{"jsonrpc":"2.0","method":"session/update","params":{"update":' + tool + "}}\n").encode())
        ask = '{"toolCall":{"toolCallId":"t","kind":"read","rawInput":' + meta + '},"options":' + meta + "}"
        _write_raw(('{"jsonrpc":"2.0","id":70,"method":"session/request_permission","params":' + ask + "}\n").encode())
        _write_raw(('{"jsonrpc":"2.0","id":71,"method":"x/y","params":{"a":' + meta + "}}\n").encode())
        _chunk("ok")
        # The answer stays parseable at any depth: only its own nesting is capped.
        answer = '{"jsonrpc":"2.0","id":' + json.dumps(request_id) + ',"result":{"stopReason":"end_turn","x":'
        _write_raw((answer + _nested(min(depth, 500)) + "}}\n").encode())
        return True
    if mode == "long_text":
        _chunk("y" * (int(arg) * 1024 * 1024))
        _result(request_id, {"stopReason": "end_turn"})
        return True
    if mode == "huge_line":
        newline = arg != "no_newline"
        _write_raw(b"z" * (40 * 1024 * 1024) + (b"\n" if newline else b""))
        _ready()
        return False
    if mode == "write_after_final":
        _chunk("ok")
        _result(request_id, {"stopReason": "end_turn"})
        for _ in range(200):
            _chunk("LATE")
            _write_raw(b"\xff garbage after the end\n")
        _result(request_id, {"stopReason": "refusal"})
        return True
    if mode == "flood_updates":
        _chunk("partial")
        _ready()
        try:
            while True:
                _chunk("z" * 1024)
        except OSError:
            os._exit(3)
    if mode == "flood_requests":
        _ready()
        n = 100
        try:
            while True:
                _send({"jsonrpc": "2.0", "id": n, "method": "fs/read_text_file", "params": {"path": "x" * 1024}})
                n += 1
        except OSError:
            os._exit(3)
    if mode == "stderr_flood":
        for _ in range(20 * 1024):
            os.write(2, b"SECRET_TOKEN /private/path " * 37 + b"\n")
        _chunk("ok")
        _result(request_id, {"stopReason": "end_turn"})
        return True
    if mode == "close_stdin_at_prompt":
        os.close(0)
        _chunk("partial")
        _ready()
        _hang()
    if mode == "exit_with_grandchild_on_stdout":
        pid = _spawn_sleeper(setsid=arg == "setsid", trap_term=True, keep_stdout=True)
        _record_pids([pid])
        _chunk("partial")
        sys.stdout.flush()
        os._exit(5)
    if mode == "grandchildren":
        pids = [_spawn_sleeper(setsid=i % 2 == 1, trap_term=i % 3 == 0) for i in range(12)]
        _record_pids(pids)
        _chunk("ok")
        _result(request_id, {"stopReason": "end_turn"})
        return True
    if mode == "ignore_signals":
        _ignore_signals()
        _chunk("partial")
        _ready()
        _hang()
    if mode == "hang":
        _chunk("partial")
        _ready()
        return False
    return False


def main() -> None:
    mode = sys.argv[1]
    arg = sys.argv[2] if len(sys.argv) > 2 else ""
    if mode == "slow_start":
        _ready()
        _hang()
    if mode == "ignore_signals":
        _ignore_signals()
    for message in _requests():
        method, request_id = message.get("method"), message.get("id")
        if method is None:
            # The host's answer to one of our requests: recorded for the test.
            with open(os.path.join(_DIR, "answers"), "a", encoding="utf-8") as handle:
                handle.write(json.dumps(message) + "\n")
            continue
        if mode == "close_stdout_after_initialize" and method != "initialize":
            continue
        if method == "initialize":
            if mode == "hang_initialize":
                _ready()
                continue
            if mode == "never_read_stdin":
                _result(request_id, {"protocolVersion": 1})
                continue
            _result(request_id, {"protocolVersion": 1})
            if mode == "early_response":
                _result(2, {"stopReason": "refusal"})
                _send({"jsonrpc": "2.0", "id": 2, "error": {"code": -32000, "message": "early"}})
            elif mode == "exit_after_initialize":
                sys.stdout.flush()
                if arg == "signal":
                    os.kill(os.getpid(), signal.SIGKILL)
                os._exit(0)
            elif mode == "close_stdout_after_initialize":
                os.close(_OUT)
        elif method == "session/new":
            _result(request_id, {"sessionId": "s"})
            if mode == "never_read_stdin":
                _ready()
                _hang()
        elif method == "session/prompt":
            if not _on_prompt(mode, arg, request_id) and mode not in ("hang", "huge_line"):
                _chunk("ok")
                _result(request_id, {"stopReason": "end_turn"})
    # stdin EOF: leave like a well-behaved agent, unless the mode ignores it.
    if mode == "ignore_signals":
        _hang()


if __name__ == "__main__":
    main()
