"""Fake DSH SDK runtime: a stdlib-only fixture speaking newline JSON-RPC 2.0 on stdio
(docs/behaviour.md#sdk-fake-runtime).

It is scripted by the ``FAKE_*`` environment switches exactly as docs/behaviour.md#sdk-fake-runtime says; a switch
counts as set when non-empty. Quick-start echo: when no ``FAKE_*`` variable is set at all, the assistant text is the
concatenated text of the prompt's ``contentBlocks`` text blocks instead of ``hello from fake runtime``. stdout carries
only protocol frames, diagnostics go to stderr. Exit codes: 3 before init, 17 during prompt, 0 on shutdown, stdin EOF
and SIGTERM, 130 on SIGINT.
"""

from __future__ import annotations

import os
import queue
import signal
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from types import FrameType
from typing import Final, NoReturn, cast

if __package__ in (None, ""):  # run as a script: make the sibling skeleton importable as ``fake_runtimes._skeleton``
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from fake_runtimes._skeleton import (
    EndOfInput,
    Inbox,
    JsonObject,
    compact_json,
    prompt_text,
    spawn_grandchild,
    start_stdin_reader,
    write_file_atomically,
)

DEFAULT_TEXT: Final = "hello from fake runtime"
SERVER_NAME: Final = "deepseek-harness-sdk-runtime"
SERVER_VERSION: Final = "0.0.1"

# Exit codes the spec pins (docs/behaviour.md#sdk-fake-runtime).
EXIT_BEFORE_INIT: Final = 3
EXIT_DURING_PROMPT: Final = 17
EXIT_SIGINT: Final = 130

# How often the INIT_READY/INIT_GO handshake polls for the GO file.
_GO_POLL_SECONDS: Final = 0.005

_OMIT: Final = object()


# FAKE_USAGE: the usage of a usage-only message and of the answer's message. "hostile" sends strings, negatives,
# floats, bools, out-of-range numbers and a lower-case currency: nothing in it is valid.
_MESSAGE_USAGE: dict[str, tuple[dict[str, object], dict[str, object]]] = {
    "1": (
        {"inputTokens": 300, "outputTokens": 25, "cost": {"amount": 0.25, "currency": "EUR"}},
        {"inputTokens": 700, "outputTokens": 50, "cost": {"amount": 0.5, "currency": "EUR"}},
    ),
    "hostile": (
        {"inputTokens": "700", "outputTokens": "NaN", "cost": {"amount": -1, "currency": "EUR"}},
        {"inputTokens": 2**53, "outputTokens": 1.5, "cost": {"amount": "0.5", "currency": "eur"}},
    ),
}


def _switch(name: str) -> str | None:
    """Return the switch's value, or None when it is unset or empty."""
    return os.environ.get(name) or None


def _hangs_on(blocks: object) -> bool:
    """``FAKE_HANG_ON=<text>``: a prompt whose text contains ``<text>`` is never answered (as ``FAKE_HANG_PROMPT``)."""
    text = _switch("FAKE_HANG_ON")
    return text is not None and text in prompt_text(blocks)


def _scripted() -> bool:
    """Whether any ``FAKE_*`` switch is set (otherwise the runtime echoes the prompt)."""
    return any(key.startswith("FAKE_") and value for key, value in os.environ.items())


def _exit_now(code: int) -> NoReturn:
    """Flush and leave at once, without joining the reader thread blocked on stdin."""
    for stream in (sys.stdout.buffer, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass  # a closed pipe has nothing left to flush
    os._exit(code)


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    del signum, frame
    path = _switch("FAKE_SIGTERM_FILE")
    if path is not None:
        write_file_atomically(path, "sigterm\n")  # a poller never reads it half-written
    if _switch("FAKE_TRAP_SIGTERM") is None:
        _exit_now(0)


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    del signum, frame
    _exit_now(EXIT_SIGINT)


class _FakeRuntime:
    """The request loop and its per-process state (the global event ``seq`` counter)."""

    def __init__(self) -> None:
        self._tasks: list[str] = []
        """Every task of the session so far (``FAKE_SESSION_ECHO``): one runtime serves one session."""
        self._seq = 0
        self._probes = 0
        self._inbox: Inbox = queue.Queue()
        self._eof_seen = threading.Event()
        # Requests read while waiting for a probe answer; handled before newer input.
        self._deferred: deque[JsonObject] = deque()

    # -- input ---------------------------------------------------------------------------------------------------

    def start_reader(self) -> None:
        start_stdin_reader(self._inbox, self._eof_seen)

    def _at_eof(self) -> NoReturn:
        if _switch("FAKE_IGNORE_EOF") is None:
            _exit_now(0)
        while True:  # stay alive; only signals end us now
            signal.pause()

    def _next_frame(self) -> JsonObject:
        if self._deferred:
            return self._deferred.popleft()
        item = self._inbox.get()
        if isinstance(item, EndOfInput):
            self._at_eof()
        return item

    def _drain_nowait(self) -> None:
        """Move pending input to the deferred queue; stdin EOF ends the process even mid-request."""
        while True:
            try:
                item = self._inbox.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, EndOfInput):
                self._at_eof()
            else:
                self._deferred.append(item)

    # -- output --------------------------------------------------------------------------------------------------

    def _write(self, message: Mapping[str, object]) -> None:
        try:
            sys.stdout.buffer.write((compact_json({"jsonrpc": "2.0", **message}) + "\n").encode("utf-8"))
            sys.stdout.buffer.flush()
        except (BrokenPipeError, ValueError):
            pass  # the host is gone; stdin EOF (or a signal) ends us

    def _result(self, request_id: object, result: object) -> None:
        self._write({"id": request_id, "result": result})

    def _error(self, request_id: object, error: Mapping[str, object]) -> None:
        self._write({"id": request_id, "error": error})

    def _notify(self, method: str, params: Mapping[str, object]) -> None:
        self._write({"method": method, "params": params})

    def _event(self, sid: str, event_type: str, data: object = _OMIT) -> None:
        event: JsonObject = {"type": event_type, "seq": self._seq, "time": 0}
        if data is not _OMIT:
            event["data"] = data
        self._seq += 1
        self._notify("session.event", {"sessionId": sid, "event": event})

    def _status(self, sid: str, status: str) -> None:
        self._notify("session.status", {"sessionId": sid, "status": status})

    def _chunk(self, sid: str, text: str) -> None:
        self._event(
            sid, "assistant/chunk", {"turn": 0, "step": 0, "chunk": {"type": "text-delta", "index": 0, "text": text}}
        )

    def _message(self, sid: str, content: Sequence[object] | str, usage: object = None) -> None:
        message = {
            "id": f"fake-assistant-{self._seq}",
            "role": "assistant",
            "content": content if isinstance(content, str) else list(content),
            "source": {"kind": "model", "provider": "fake", "model": "fake"},
        }
        data: dict[str, object] = {"turn": 0, "step": 0, "message": message}
        if usage is not None:
            data["usage"] = usage
        self._event(sid, "assistant/message", data)

    # -- the loop ------------------------------------------------------------------------------------------------

    def serve(self) -> None:
        while True:
            frame = self._next_frame()
            method = frame.get("method")
            if "id" not in frame or not isinstance(method, str):
                continue  # notifications and stray responses
            params = frame.get("params")
            typed_params = cast(JsonObject, params) if isinstance(params, dict) else {}
            self._dispatch(frame["id"], method, typed_params)

    def _dispatch(self, request_id: object, method: str, params: JsonObject) -> None:
        if method == "initialize":
            self._initialize(request_id, params)
        elif method == "session/prompt":
            self._prompt(request_id, params)
        elif method == "shutdown":
            if _switch("FAKE_IGNORE_SHUTDOWN") is not None:
                return
            self._result(request_id, {})
            if _switch("FAKE_IGNORE_EOF") is None:
                _exit_now(0)
        else:
            self._error(request_id, {"code": -32603, "message": f"unknown method: {method}"})

    def _initialize(self, request_id: object, params: JsonObject) -> None:
        record = _switch("FAKE_RECORD_INIT")
        if record is not None:
            with open(record, "a", encoding="utf-8") as file:
                file.write(compact_json(params) + "\n")
        ready, go = _switch("FAKE_INIT_READY"), _switch("FAKE_INIT_GO")
        if _switch("FAKE_HANG_INIT") is not None:
            return
        if ready is not None and go is not None:
            write_file_atomically(ready, "ready\n")
            while not os.path.exists(go):
                self._drain_nowait()
                time.sleep(_GO_POLL_SECONDS)
            self._result(request_id, self._server_info())
        elif _switch("FAKE_INIT_ERROR") is not None:
            self._error(request_id, {"code": 7, "message": "scripted init failure", "data": {"hint": "fake"}})
        elif _switch("FAKE_MALFORMED") is not None:
            self._result(request_id, {})
        else:
            self._result(request_id, self._server_info())

    def _server_info(self) -> JsonObject:
        version = os.getcwd() if _switch("FAKE_ECHO_CWD_IN_INIT") is not None else SERVER_VERSION
        return {"serverInfo": {"name": SERVER_NAME, "version": version}}

    def _prompt(self, request_id: object, params: JsonObject) -> None:
        raw_sid = params.get("sessionId")
        sid = raw_sid if isinstance(raw_sid, str) else ""
        blocks = params.get("contentBlocks")
        message_id = f"fake-user-{self._seq}"
        if _switch("FAKE_PRE_RECEIPT_NOISE") is not None:
            self._status(sid, "idle")
            self._message(sid, [{"type": "text", "text": "noise"}])
        flood = _switch("FAKE_PRE_RECEIPT_FLOOD_MIB")
        if flood is not None:
            self._flood(sid, int(flood))
        inserted: list[JsonObject] = [{"id": message_id, "role": "user", "content": [], "source": {"kind": "user"}}]
        self._event(sid, "agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": inserted})
        self._status(sid, "running")

        if _switch("FAKE_PROMPT_ERROR") is not None:
            failure = "scripted prompt failure /private/path SECRET_TOKEN"
            self._error(request_id, {"code": -32603, "message": failure})
        elif _switch("FAKE_STREAM_THEN_MALFORMED") is not None:
            self._chunk(sid, "streamed then cut short")
            self._result(request_id, {})
        elif _switch("FAKE_EXIT_DURING_PROMPT") is not None:
            partial = _switch("FAKE_TEXT") or "partial before exit"
            self._result(request_id, {"messageId": message_id})
            self._chunk(sid, partial)
            self._message(sid, [{"type": "text", "text": partial}])
            _exit_now(EXIT_DURING_PROMPT)
        elif _switch("FAKE_HANG_AFTER_CHUNK") is not None:
            self._event(sid, "turn/start", {"turn": 0})
            self._chunk(sid, self._text(blocks))
            self._result(request_id, {"messageId": message_id})
        elif _switch("FAKE_HANG_PROMPT") is not None or _hangs_on(blocks):
            return
        elif _switch("FAKE_MALFORMED") is not None or _switch("FAKE_MALFORMED_PROMPT") is not None:
            self._result(request_id, {})
        else:
            self._run_turn(sid, blocks)
            self._status(sid, "idle")
            self._result(request_id, {"messageId": message_id})

    def _flood(self, sid: str, mib: int) -> None:
        """Send ``mib`` text-delta chunks of 1 MiB each for ``sid`` (before the receipt, so the host skips them)."""
        text = "x" * (1 << 20)
        for _ in range(mib):
            self._drain_nowait()  # stdin EOF (the host tearing us down) ends the flood and the process
            self._chunk(sid, text)

    def _text(self, blocks: object, probe_line: str | None = None) -> str:
        """Build the assistant text: the docs/behaviour.md#sdk-fake-runtime lines when scripted, else the quick-start
        echo of the prompt."""
        if _switch("FAKE_SESSION_ECHO") is not None:
            # The session across prompts: this process and every task so far (docs/behaviour.md#sdk-fake-runtime).
            self._tasks.append(prompt_text(blocks))
            return f"pid={os.getpid()} tasks=" + " | ".join(self._tasks)
        if not _scripted():
            return prompt_text(blocks)
        lines: list[str] = [] if probe_line is None else [probe_line]
        if _switch("FAKE_ECHO_CWD") is not None:
            lines.append(f"cwd={os.getcwd()}")
        names = [name.strip() for name in (_switch("FAKE_ECHO_ENV") or "").split(",")]
        lines.extend(f"{name}={os.environ.get(name, '')}" for name in names if name)
        lines.append(_switch("FAKE_TEXT") or DEFAULT_TEXT)
        return "\n".join(lines)

    def _probe(self, method: str) -> str:
        """Send the host a request and wait for its answer; return its error code, or ``ok``."""
        self._probes += 1
        probe_id = f"fake-probe-{self._probes}"
        self._write({"id": probe_id, "method": method, "params": {}})
        while True:
            item = self._inbox.get()
            if isinstance(item, EndOfInput):
                self._at_eof()
            if "method" not in item and item.get("id") == probe_id:
                error = item.get("error")
                return compact_json(cast(JsonObject, error).get("code")) if isinstance(error, dict) else "ok"
            self._deferred.append(item)

    def _run_turn(self, sid: str, blocks: object) -> None:
        if _switch("FAKE_MALFORMED_EVENT") is not None:
            self._notify("session.event", {"sessionId": sid, "event": 42})
            return
        probe_method = _switch("FAKE_SERVER_REQUEST")
        probe_line = None if probe_method is None else f"probe {probe_method}: {self._probe(probe_method)}"
        if _switch("FAKE_UNKNOWN_EVENT") is not None:
            self._event(sid, "future/event", {"x": 1})
        if _switch("FAKE_TWO_TURNS") is not None:
            self._event(sid, "turn/start", {"turn": 0})
            first_error = {"message": "first turn failed", "code": "UNKNOWN"}
            self._event(sid, "turn/end", {"turn": 0, "reason": {"kind": "error", "error": first_error}})
        text = self._text(blocks, probe_line)
        self._event(sid, "turn/start", {"turn": 0})
        self._chunk(sid, text)
        if _switch("FAKE_MALFORMED_CHUNK") is not None:
            self._event(sid, "assistant/chunk", {"turn": 0, "step": 0})
            return
        if _switch("FAKE_MALFORMED_MESSAGE") is not None:
            self._message(sid, "not-an-array")
            return
        if _switch("FAKE_MESSAGE_WITHOUT_DATA") is not None:
            self._event(sid, "assistant/message")
            return
        content: list[object] = [] if _switch("FAKE_EMPTY_MESSAGE") is not None else [{"type": "text", "text": text}]
        reasoning = _switch("FAKE_REASONING")  # records tests: a closed reasoning block after the text
        if reasoning is not None:
            content.append({"type": "reasoning", "text": reasoning})
        usage = _MESSAGE_USAGE.get(_switch("FAKE_USAGE") or "")
        if usage is not None:
            # A usage-only step first (empty content: it never erases the answer), then the answer's own usage.
            self._message(sid, [], usage[0])
        self._message(sid, content, usage[1] if usage is not None else None)
        self._turn_end(sid)
        if _switch("FAKE_SUBAGENT") is not None:
            self._subagent(sid)

    def _turn_end(self, sid: str) -> None:
        kind = _switch("FAKE_REASON_KIND") or "completed"
        if kind == "none":
            return
        malformed = _switch("FAKE_MALFORMED_REASON")
        if malformed == "no-data":
            self._event(sid, "turn/end")
            return
        if malformed == "null-data":
            self._event(sid, "turn/end", None)
            return
        self._event(sid, "turn/end", {"turn": 0, "reason": _reason(kind, malformed)})

    def _subagent(self, sid: str) -> None:
        child = f"{sid}-child"
        self._notify("subagent.started", {"parentSessionId": sid, "childSessionId": child})
        self._message(child, [{"type": "text", "text": "child says hi"}])
        finished: JsonObject = {
            "provider": "fake",
            "agentId": "fake-child-agent",
            "parentSessionId": sid,
            "childSessionId": child,
            "status": "ok",
            "stopReason": "completed",
            "lastAssistantMessage": [{"type": "text", "text": "child says hi"}],
        }
        self._notify("subagent.finished", finished)


def _reason(kind: str, malformed: str | None) -> object:
    """Pick the ``turn/end`` reason (docs/behaviour.md#sdk-fake-runtime ``run_turn`` step 10, after the data-less
    variants)."""
    if malformed == "aborted":
        return {"kind": "aborted"}
    if malformed == "abort-unknown":
        return {"kind": "aborted", "reason": {"kind": "future"}}
    if malformed == "hook":
        return {"kind": "aborted", "reason": {"kind": "hook"}}
    if malformed is not None:
        return "not-a-reason-envelope"
    if kind == "aborted":
        cause = _switch("FAKE_ABORT_REASON_KIND")
        if cause == "hook":
            return {"kind": "aborted", "reason": {"kind": "hook", "reason": "scripted hook abort"}}
        return {"kind": "aborted", "reason": {"kind": cause or "user"}}
    if kind == "error":
        return {"kind": "error", "error": {"message": "scripted child error", "code": "UNKNOWN"}}
    return {"kind": kind}


def main() -> None:
    """Boot (docs/behaviour.md#sdk-fake-runtime steps 1-5) and serve until shutdown, stdin EOF or a signal."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    signal.signal(signal.SIGINT, _on_sigint)
    stderr_line = _switch("FAKE_STDERR")
    if stderr_line is not None:
        sys.stderr.write(stderr_line + "\n")
    stderr_fragment = _switch("FAKE_STDERR_NO_NEWLINE")
    if stderr_fragment is not None:
        sys.stderr.write(stderr_fragment)
    sys.stderr.flush()
    if _switch("FAKE_EXIT_BEFORE_INIT") is not None:
        _exit_now(EXIT_BEFORE_INIT)
    pid_file = _switch("FAKE_GRANDCHILD_PID_FILE")
    if pid_file is not None:
        spawn_grandchild(pid_file, setsid=_switch("FAKE_GRANDCHILD_SETSID") is not None)
    runtime = _FakeRuntime()
    runtime.start_reader()
    runtime.serve()


if __name__ == "__main__":
    main()
