"""A hostile DSH SDK runtime: a minimal correct runtime plus tricks selected by ``ADV`` (comma-separated).

Without tricks it answers ``initialize``, runs one completed turn whose text is ``ADV_TEXT`` (default ``ok``) and
exits on ``shutdown`` or stdin EOF. ``ADV_READY=<path>`` is written when the trick's stage is reached (see each
trick); ``ADV_PIDS=<path>`` receives one pid per line for every descendant it creates. Stdlib only.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any, cast

TRICKS = frozenset(filter(None, os.environ.get("ADV", "").split(",")))
OUT = sys.stdout.buffer
SEQ = [0]


def has(trick: str) -> bool:
    return trick in TRICKS


def raw(data: bytes) -> None:
    OUT.write(data)
    OUT.flush()


def junk() -> None:
    """Lines a lenient reader must skip without losing the frames around them."""
    raw(
        b"\x00\xff\xfe binary garbage\n"
        b"\xc3\x28 invalid utf-8\n"
        b"NaN\n"
        b'{"jsonrpc":"2.0","id":"req_x","result":NaN}\n'
        b'{"jsonrpc":"2.0","method":"session.status","params":{"sessionId":"s","status":Infinity}}\n'
        b"[1,2,3]\n"
        b'"a string"\n'
        b"{\n"
        b"   \t  \r\n"
        b"\n"
        b'{"jsonrpc":"2.0","id":true,"result":{"serverInfo":{"name":"n","version":"v"}}}\n'
        b'{"jsonrpc":"2.0","id":"req_not_pending","result":{"messageId":"m"}}\n'
        b'{"jsonrpc":"2.0","id":null,"result":{}}\n'
        b'{"jsonrpc":"2.0","id":1e400,"result":{}}\n'
        b'{"jsonrpc":"2.0","id":{"a":1},"error":{"code":1,"message":"SECRET_TOKEN"}}\n'
        b'{"jsonrpc":"2.0","id":"' + b"9" * 5000 + b'","result":1}\n'
        b'{"id":' + b"9" * 5000 + b',"result":1}\n' + b"[" * 200_000 + b"]" * 200_000 + b"\n"
        b'{"jsonrpc":"2.0","method":"weird/notification","params":[1,2]}\n'
        b'{"jsonrpc":"2.0","method":"session.event","params":{"sessionId":["unhashable"],"event":{}}}\n'
        b'{"jsonrpc":"2.0","method":"session.event","params":{"sessionId":{"a":1},"event":{}}}\n'
        b'{"jsonrpc":"2.0","method":42,"params":{}}\n'
        b'{"jsonrpc":"2.0","id":"req_dup","method":42}\n'
    )


def write(message: dict[str, Any]) -> None:
    if has("garbage"):
        junk()
    line = (json.dumps({"jsonrpc": "2.0", **message}, separators=(",", ":")) + "\n").encode()
    raw(line)
    if has("dup"):
        raw(line)


def notify(method: str, params: dict[str, Any]) -> None:
    write({"method": method, "params": params})


def event(sid: str, kind: str, data: dict[str, Any]) -> None:
    notify("session.event", {"sessionId": sid, "event": {"type": kind, "seq": SEQ[0], "time": 0, "data": data}})
    SEQ[0] += 1


def mark_ready(stage: str) -> None:
    path = os.environ.get("ADV_READY")
    if path and (os.environ.get("ADV_READY_AT", "prompt") == stage):
        with open(path + ".tmp", "w", encoding="utf-8") as file:
            file.write("ready\n")
        os.replace(path + ".tmp", path)


def record_pid(pid: int) -> None:
    path = os.environ.get("ADV_PIDS")
    if path:
        with open(path, "a", encoding="utf-8") as file:
            file.write(f"{pid}\n")


def forever() -> None:
    while True:
        time.sleep(60)


def spawn_grandchild(*, setsid: bool, ignore_term: bool, keep_stdout: bool = False, daemon: bool = False) -> None:
    pid = os.fork()
    if pid:
        if daemon:
            os.waitpid(pid, 0)  # the intermediate exits at once: the daemon is re-parented away from us
        else:
            record_pid(pid)
        return
    try:
        if not keep_stdout:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
        if setsid:
            os.setsid()
        if ignore_term:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        if daemon:
            inner = os.fork()
            if inner:
                record_pid(inner)
                os._exit(0)
        forever()
    finally:
        os._exit(0)


def run_turn(sid: str, message_id: str) -> None:
    text = os.environ.get("ADV_TEXT", "ok")
    if has("surrogates"):
        text += " lone \ud800 pair-half \ude00 end"
    event(sid, "agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": [{"id": message_id}]})
    notify("session.status", {"sessionId": sid, "status": "running"})
    mark_ready("prompt")
    if has("flood_root"):
        while True:
            event(sid, "assistant/chunk", {"turn": 0, "step": 0, "chunk": {"type": "text-delta", "text": "x"}})
    if has("flood_foreign"):
        while True:
            event("session-foreign", "assistant/chunk", {"chunk": {"type": "text-delta", "text": "y" * 4096}})
    if has("flood_stderr"):
        while True:
            sys.stderr.write("SECRET_TOKEN /private/path flood\n" * 1000)
    if has("hang_turn"):
        forever()
    event(sid, "turn/start", {"turn": 0})
    event(sid, "assistant/chunk", {"turn": 0, "step": 0, "chunk": {"type": "text-delta", "index": 0, "text": text}})
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    depth = int(os.environ.get("ADV_DEEP", "0"))
    if depth:
        # Built as text: the child's own json module would hit its recursion limit first.
        deep = "[" * depth + '"bottom"' + "]" * depth
        message = json.dumps({"role": "assistant", "content": content})[:-2] + ',{"type":"deep","value":' + deep + "}]}"
        frame = (
            '{"sessionId":%s,"event":{"type":"assistant/message","seq":%d,"time":0,'
            '"data":{"turn":0,"step":0,"message":%s}}}'
        )
        raw(
            b'{"jsonrpc":"2.0","method":"session.event","params":'
            + (frame % (json.dumps(sid), SEQ[0], message)).encode()
            + b"}\n"
        )
        SEQ[0] += 1
    else:
        event(sid, "assistant/message", {"turn": 0, "step": 0, "message": {"role": "assistant", "content": content}})
    event(sid, "turn/end", {"turn": 0, "reason": {"kind": "completed"}})
    notify("session.status", {"sessionId": sid, "status": "idle"})


def weird_requests() -> None:
    for request_id in (None, {"a": 1}, [1], True, 1.5, 10**30, -1, "", "x" * 10000):
        write({"id": request_id, "method": "host/please", "params": {"SECRET_TOKEN": 1}})
    notify("unknown/notification", {"sessionId": "whatever"})
    notify("subagent.started", {"parentSessionId": 1})


def on_initialize(request_id: object) -> None:
    mark_ready("initialize")
    if has("hang_init"):
        forever()
    if has("huge_line_init"):
        raw(b"x" * (40 * 1024 * 1024) + b"\n")
    if has("bool_id_init"):
        write({"id": True, "result": {"serverInfo": {"name": "n", "version": "v"}}})
        return
    if has("wrong_id_init"):
        write({"id": f"{request_id}-other", "result": {"serverInfo": {"name": "n", "version": "v"}}})
        return
    if has("odd_init_result"):
        write({"id": request_id, "result": {"serverInfo": {"name": 1, "version": ["SECRET_TOKEN"]}}})
        return
    if has("close_stdin"):
        os.close(0)  # before answering: the host's next write must find no reader, never a buffered pipe
    write({"id": request_id, "result": {"serverInfo": {"name": "adversarial", "version": "0"}}})
    if has("weird_requests"):
        weird_requests()
    if has("exit_after_init"):
        os._exit(0)
    if has("killed_after_init"):
        os.kill(os.getpid(), signal.SIGKILL)
    if has("close_stdout"):
        os.close(1)
        forever()
    if has("close_stdin"):
        forever()
    if has("no_read"):
        forever()


def on_prompt(request_id: object, params: dict[str, Any]) -> None:
    sid = params.get("sessionId")
    sid = sid if isinstance(sid, str) else ""
    message_id = f"adv-{SEQ[0]}"
    if has("huge_line_prompt"):
        raw(b"y" * (40 * 1024 * 1024) + b"\n")
    if has("odd_prompt_result"):
        write({"id": request_id, "result": {"messageId": ["SECRET_TOKEN"], "extra": float("1e308")}})
        return
    if has("response_first"):
        write({"id": request_id, "result": {"messageId": message_id}})
    if has("exit_holding_stdout"):
        spawn_grandchild(setsid=False, ignore_term=True, keep_stdout=True)
        write({"id": request_id, "result": {"messageId": message_id}})
        os._exit(5)
    run_turn(sid, message_id)
    if not has("response_first"):
        write({"id": request_id, "result": {"messageId": message_id}})
    if has("write_after_final"):
        event(sid, "turn/end", {"turn": 1, "reason": {"kind": "error", "error": {"message": "SECRET_TOKEN"}}})
        notify("session.status", {"sessionId": sid, "status": "idle"})
        junk()


def boot() -> None:
    count = int(os.environ.get("ADV_GRANDCHILDREN", "0"))
    for index in range(count):
        spawn_grandchild(setsid=index % 2 == 1, ignore_term=index % 3 == 0)
    if has("daemon"):
        spawn_grandchild(setsid=True, ignore_term=True, daemon=True)
    if has("ignore_signals"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if has("responses_before_requests"):
        for request_id in ("req_0", 0, 1, "req_" + "0" * 32):
            write({"id": request_id, "result": {"serverInfo": {"name": "early", "version": "0"}}})


def main() -> None:
    boot()
    for line in sys.stdin.buffer:
        try:
            frame = json.loads(line)
        except ValueError:
            continue
        if not isinstance(frame, dict):
            continue
        frame = cast(dict[str, Any], frame)
        method, request_id = frame.get("method"), frame.get("id")
        if method == "initialize":
            on_initialize(request_id)
        elif method == "session/prompt":
            params = frame.get("params")
            on_prompt(request_id, cast(dict[str, Any], params) if isinstance(params, dict) else {})
        elif method == "shutdown":
            mark_ready("shutdown")
            write({"id": request_id, "result": {}})
            if has("ignore_signals") or has("no_exit_on_shutdown"):
                continue
            return
    if has("ignore_signals"):
        forever()


if __name__ == "__main__":
    main()
