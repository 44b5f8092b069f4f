"""A stand-alone fake ACP v1 agent for tests, scripted only by ``MOCK_*`` environment variables
(docs/behaviour.md#acp-fake-agent).

Speaks newline-delimited JSON-RPC 2.0 on stdin/stdout and writes nothing else to stdout. Stdlib only, so it runs
under any ``sys.executable``. With **no** ``MOCK_*`` variable in the environment it is a friendly echo agent: a
prompt is answered with its concatenated text blocks as one ``agent_message_chunk``, then ``end_turn``. As soon as
any ``MOCK_*`` variable is set, docs/behaviour.md#acp-fake-agent applies verbatim (default text ``mock child answer``).
Exit codes: 11 crash on ``initialize``, 1 crash on prompt or cancel, 17 crash after the chunk, 0 on stdin EOF, flush and
SIGTERM-handler exits.
"""

from __future__ import annotations

import json
import os
import queue
import select
import signal
import stat
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import NoReturn, cast

if __package__ in (None, ""):  # run as a script: make the sibling skeleton importable as ``fake_runtimes._skeleton``
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from fake_runtimes import _acp_sessions as sessions
from fake_runtimes._skeleton import (
    EOF,
    Inbox,
    JsonObject,
    compact_json,
    prompt_text,
    spawn_grandchild,
    start_stdin_reader,
    write_file_atomically,
)

EXIT_EOF: int = 0
"""Exit code on stdin EOF, after a flush, and from the SIGTERM handler of ``MOCK_IGNORE_EOF``."""
EXIT_CRASH_ON_INITIALIZE: int = 11
"""Exit code of ``MOCK_CRASH_ON_INITIALIZE``."""
EXIT_CRASH: int = 1
"""Exit code of ``MOCK_CRASH_ON_PROMPT`` and ``MOCK_CRASH_ON_CANCEL``."""
EXIT_CRASH_AFTER_CHUNK: int = 17
"""Exit code of ``MOCK_CRASH_AFTER_CHUNK``."""

DEFAULT_TEXT = "mock child answer"
SPLIT_SURROGATE_CHUNKS = ("smile \ud83d", "\ude00, lone \udc80 ", "<\ud800> ")
"""``MOCK_SPLIT_SURROGATES``: U+1F600 split between two chunks (its UTF-16 halves), a lone low and a lone high
surrogate, each sent as a ``\\uXXXX`` escape."""
THOUGHT_TEXT = "thinking…"
METHOD_NOT_FOUND = -32601

# How often the newSession gate polls for its GO file.
_GATE_POLL_SECONDS = 0.01
# How often a write blocked on a full stdout pipe re-checks for stdin EOF.
_BLOCKED_WRITE_POLL_SECONDS = 0.05

# MOCK_USAGE: the usage_update updates sent before the answer, and the prompt response's usage. "hostile" sends
# strings, negatives, floats, bools, out-of-range numbers and a lower-case currency: only `size: 100` is valid.
_USAGE_UPDATES: dict[str, list[JsonObject]] = {
    "1": [
        {"used": 800, "size": 200000, "cost": {"amount": 0.25, "currency": "USD"}},
        {"used": 1200, "size": 200000, "cost": {"amount": 0.75, "currency": "USD"}},
    ],
    "hostile": [
        {"used": "1200", "size": -5, "cost": {"amount": "NaN", "currency": "USD"}},
        {"used": 2**64, "size": True, "cost": {"amount": 1e300, "currency": "USD"}},
        {"used": 1.5, "size": 100, "cost": {"amount": 0.5, "currency": "usd"}},
        {"used": None, "cost": {"amount": -1, "currency": "\u001b[31mUSD"}},
    ],
}
_PROMPT_USAGE: dict[str, JsonObject] = {
    "1": {"inputTokens": 1000, "outputTokens": 200, "totalTokens": 1200},
    "hostile": {"inputTokens": "999", "outputTokens": -1, "totalTokens": 1e300},
}

_ALLOW_OPTION: JsonObject = {"optionId": "yes", "name": "Allow", "kind": "allow_once"}
_REJECT_OPTION: JsonObject = {"optionId": "no", "name": "Reject", "kind": "reject_once"}


def _env(name: str) -> str | None:
    return os.environ.get(name)


def _flag(name: str) -> bool:
    return os.environ.get(name) == "1"


def _append_line(path: str, line: str) -> None:
    """Append one line in a single ``write`` so a concurrent reader never sees half of it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, (line + "\n").encode("utf-8"))
    finally:
        os.close(fd)


def _stay_alive_forever() -> NoReturn:
    while True:
        signal.pause()


def apply_fs_ops(ops: list[list[str]]) -> None:
    """Edit files in the cwd, in order: ``["write", path, text]``, ``["append", path, text]``, ``["write_bytes",
    path, hex]``, ``["delete", path]``, ``["rename", old, new]``, ``["commit", message]`` (``git add -A`` + ``git
    commit`` in the cwd)."""
    for op in ops:
        verb, *args = op
        if verb in ("write", "append"):
            os.makedirs(os.path.dirname(args[0]) or ".", exist_ok=True)
            with open(args[0], "w" if verb == "write" else "a", encoding="utf-8") as file:
                file.write(args[1])
        elif verb == "write_bytes":
            with open(args[0], "wb") as file:
                file.write(bytes.fromhex(args[1]))
        elif verb == "delete":
            os.unlink(args[0])
        elif verb == "rename":
            os.rename(args[0], args[1])
        elif verb == "commit":
            identity = ["-c", "user.name=fake", "-c", "user.email=fake@localhost", "-c", "commit.gpgSign=false"]
            subprocess.run(["git", "add", "-A"], check=True, stdout=subprocess.DEVNULL)
            subprocess.run(["git", *identity, "commit", "-q", "-m", args[0]], check=True, stdout=subprocess.DEVNULL)


@dataclass(slots=True)
class _Agent:
    """The agent's state; only the main thread touches it (the reader thread only feeds ``inbox``)."""

    inbox: Inbox
    eof_seen: threading.Event
    echo_mode: bool
    stdout_broken: bool = False
    next_id: int = 0
    session_id: str | None = None
    session_cwd: str | None = None
    hanging_prompt: tuple[object, str] | None = None
    """(request id, session id) of a ``MOCK_HANG`` prompt awaiting ``session/cancel``."""
    prompts_in_flight: list[object] = field(default_factory=lambda: [])
    cancel_requested: bool = False
    book: sessions.SessionBook = field(default_factory=sessions.SessionBook)

    # -- wire --------------------------------------------------------------------------------------------------

    def send(self, message: JsonObject) -> None:
        """Write one message as one line; after a broken pipe, drop further output and keep serving EOF rules.

        A write blocked on a full stdout pipe is abandoned once stdin reaches EOF, so an unread agent still
        exits promptly on EOF instead of hanging in ``write``.
        """
        if self.stdout_broken:
            return
        try:
            data = (compact_json({"jsonrpc": "2.0", **message}) + "\n").encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (MOCK_SPLIT_SURROGATES): escaped, as JSON.stringify does
            data = (json.dumps({"jsonrpc": "2.0", **message}, separators=(",", ":")) + "\n").encode("ascii")
        view = memoryview(data)
        try:
            while view:
                try:
                    written = os.write(1, view)
                except BlockingIOError:
                    if self.eof_seen.is_set():
                        self.stdout_broken = True
                        return
                    select.select([], [1], [], _BLOCKED_WRITE_POLL_SECONDS)
                    continue
                view = view[written:]
        except OSError:
            self.stdout_broken = True

    def respond(self, request_id: object, result: JsonObject) -> None:
        self.send({"id": request_id, "result": result})

    def respond_error(self, request_id: object, code: int, message: str) -> None:
        self.send({"id": request_id, "error": {"code": code, "message": message}})

    def notify(self, method: str, params: JsonObject) -> None:
        self.send({"method": method, "params": params})

    def update(self, session_id: str, update: JsonObject) -> None:
        self.notify("session/update", {"sessionId": session_id, "update": update})

    def request(self, method: str, params: JsonObject) -> JsonObject:
        """Send a request and serve other inbound messages until its response arrives; return the response."""
        request_id = self.next_id
        self.next_id += 1
        self.send({"id": request_id, "method": method, "params": params})
        while True:
            message = self.receive()
            if _is_response(message) and message.get("id") == request_id:
                return message
            self.dispatch(message)

    def receive(self) -> JsonObject:
        """Take the next inbound message; stdin EOF is handled here (exit, flush, or stay alive)."""
        item = self.inbox.get()
        if item is EOF:
            _on_stdin_eof()
        return cast(JsonObject, item)

    # -- dispatch ----------------------------------------------------------------------------------------------

    def serve_forever(self) -> NoReturn:
        while True:
            self.dispatch(self.receive())

    def dispatch(self, message: JsonObject) -> None:
        method = message.get("method")
        if not isinstance(method, str):
            return  # responses to unknown ids and malformed messages are ignored
        params_value = message.get("params")
        params = cast(JsonObject, params_value) if isinstance(params_value, dict) else {}
        if "id" not in message:
            if method == "session/cancel":
                sid = params.get("sessionId")
                sessions.log(f"cancel {sid}")
                self.on_cancel()
            return
        request_id = message["id"]
        if method == "initialize":
            self.on_initialize(request_id, params)
        elif method == "authenticate":
            self.respond(request_id, {})
        elif method == "session/new":
            self.on_new_session(request_id, params)
        elif method == "session/prompt":
            self.on_prompt(request_id, params)
        elif method in ("session/resume", "session/load", "session/close", "session/fork"):
            self.on_session_method(request_id, method, params)
        else:
            self.respond_error(request_id, METHOD_NOT_FOUND, "Method not found")

    def on_initialize(self, request_id: object, params: JsonObject) -> None:
        record = _env("MOCK_RECORD_INIT")
        if record:
            _append_line(record, compact_json(params))
        if _flag("MOCK_CRASH_ON_INITIALIZE"):
            os._exit(EXIT_CRASH_ON_INITIALIZE)
        self.gate("MOCK_INITIALIZE_READY", "MOCK_INITIALIZE_GO", "at-initialize")
        self.respond(
            request_id,
            {
                "protocolVersion": 1,
                "agentCapabilities": {
                    "promptCapabilities": {"image": False, "audio": False, "embeddedContext": False},
                    **sessions.capabilities(),
                },
                "authMethods": [],
            },
        )

    def gate(self, ready_name: str, go_name: str, marker: str) -> None:
        """With both variables set: write ``marker`` to the READY file, then wait for the GO file (stdin EOF exits)."""
        ready, go = _env(ready_name), _env(go_name)
        if ready and go:
            write_file_atomically(ready, marker)
            while not os.path.exists(go):
                if self.eof_seen.is_set():
                    _on_stdin_eof()
                time.sleep(_GATE_POLL_SECONDS)

    def on_new_session(self, request_id: object, params: JsonObject) -> None:
        cwd = params.get("cwd")
        self.session_cwd = cwd if isinstance(cwd, str) else None
        self.gate("MOCK_NEWSESSION_READY", "MOCK_NEWSESSION_GO", "at-newSession")
        if _flag("MOCK_MISSING_SESSION_ID"):
            self.respond(request_id, {})
            return
        self.session_id = _env("MOCK_SESSION_ID") or str(uuid.uuid4())
        self.book.new(self.session_id)
        self.respond(request_id, {"sessionId": self.session_id})

    def on_session_method(self, request_id: object, method: str, params: JsonObject) -> None:
        """``session/resume``, ``load``, ``close`` and ``fork``, each behind its switch (``_acp_sessions``)."""
        switch = {"session/resume": "RESUME", "session/load": "LOAD", "session/close": "CLOSE", "session/fork": "FORK"}
        if not _flag("MOCK_SESSION_" + switch[method]):
            self.respond_error(request_id, METHOD_NOT_FOUND, "Method not found")
            return
        sid_value = params.get("sessionId")
        sid = sid_value if isinstance(sid_value, str) else ""
        sessions.log(f"{method.removeprefix('session/')} {sid}")
        tasks = self.book.find(sid)
        if tasks is None:
            self.respond_error(request_id, sessions.RESOURCE_NOT_FOUND, "Resource not found")
            return
        if method == "session/fork":
            self.respond(request_id, {"sessionId": self.book.fork(sid)})
            return
        if method == "session/load":
            for task in tasks:
                self.update(sid, {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": task}})
                self.update(sid, _chunk("agent_message_chunk", f"replayed: {task}"))
            self.respond(request_id, {})
            return
        if method != "session/close":
            self.session_id = sid
            cwd = params.get("cwd")
            self.session_cwd = cwd if isinstance(cwd, str) else None  # MOCK_ECHO_CWD echoes the resumed cwd too
        self.respond(request_id, {})

    def on_prompt(self, request_id: object, params: JsonObject) -> None:
        sid_value = params.get("sessionId")
        sid = sid_value if isinstance(sid_value, str) else (self.session_id or "")
        self.prompts_in_flight.append(request_id)
        self.cancel_requested = False
        task = prompt_text(params.get("prompt"))
        self.book.prompt(sid, task)
        try:
            self.run_prompt(request_id, sid, task)
        finally:
            self.prompts_in_flight.remove(request_id)

    def run_prompt(self, request_id: object, sid: str, prompt_text: str) -> None:
        if _flag("MOCK_CRASH_ON_PROMPT"):
            os._exit(EXIT_CRASH)
        if _flag("MOCK_PERMISSION"):
            tool_call: JsonObject = {"toolCallId": "mock-call", "title": "mock side effect"}
            kind = _env("MOCK_TOOL_KIND")
            if kind is not None:
                tool_call["kind"] = kind
            options = [_REJECT_OPTION] if _flag("MOCK_NO_ALLOW") else [_ALLOW_OPTION, _REJECT_OPTION]
            outcome = self.ask_permission(sid, tool_call, options)
            # Anything but "selected" (cancelled, an error answer, a malformed result) counts as a denial.
            if not _is_selected(outcome) and not _flag("MOCK_PERMISSION_IGNORE_DECISION"):
                self.respond(request_id, {"stopReason": "cancelled"})
                return
        probe_text = self.probe(sid)
        if _flag("MOCK_EXTRA_UPDATES"):
            self.update(sid, {"sessionUpdate": "future_update_kind", "payload": 1})
            self.update(
                sid,
                {
                    "sessionUpdate": "plan",
                    "entries": [{"content": "mock step", "priority": "medium", "status": "pending"}],
                },
            )
            self.update(sid, {"sessionUpdate": "usage_update", "used": 1, "size": 10})
            self.notify("_mock/notice", {"text": "ignored"})
        for usage in _USAGE_UPDATES.get(_env("MOCK_USAGE") or "", []):
            self.update(sid, {"sessionUpdate": "usage_update", **usage})
        if _flag("MOCK_THOUGHT"):
            self.update(sid, _chunk("agent_thought_chunk", THOUGHT_TEXT))
        if _flag("MOCK_TOOL_CALL"):
            self.update(
                sid,
                {
                    "sessionUpdate": "tool_call",
                    "toolCallId": "mock-tool",
                    "title": "mock tool",
                    "kind": "read",
                    "status": "pending",
                },
            )
            self.update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "mock-tool", "status": "completed"})
        if _flag("MOCK_IMAGE_CHUNK"):  # records tests: a non-text content chunk (an unknown block to the host)
            image: JsonObject = {"type": "image", "data": "", "mimeType": "image/png"}
            self.update(sid, {"sessionUpdate": "agent_message_chunk", "content": image})
        streamed = int(_env("MOCK_STREAM_CHUNKS") or 0)
        for number in range(1, streamed + 1):  # a slow stream: one chunk per MOCK_STREAM_DELAY_MS, before the answer
            time.sleep(int(_env("MOCK_STREAM_DELAY_MS") or 0) / 1000)
            self.update(sid, _chunk("agent_message_chunk", f"streamed chunk {number}\n"))
        if _flag("MOCK_SPLIT_SURROGATES"):  # a JavaScript agent slicing its text at UTF-16 code units
            for part in SPLIT_SURROGATE_CHUNKS:
                self.update(sid, _chunk("agent_message_chunk", part))
        fs_ops = prompt_text if _flag("MOCK_FS_OPS_FROM_PROMPT") else _env("MOCK_FS_OPS")
        if fs_ops:
            apply_fs_ops(json.loads(fs_ops))
        self.update(sid, _chunk("agent_message_chunk", self.answer_text(prompt_text, probe_text, sid)))
        if _flag("MOCK_CRASH_AFTER_CHUNK"):
            os._exit(EXIT_CRASH_AFTER_CHUNK)  # every write went straight to the fd: nothing left to flush
        ready = _env("MOCK_READY_FILE")
        if ready:
            write_file_atomically(ready, "ready")
        hang_on = _env("MOCK_HANG_ON")
        if _flag("MOCK_HANG") or (hang_on is not None and hang_on in prompt_text):
            if self.cancel_requested:
                # session/cancel arrived while this prompt was still working (e.g. awaiting a permission answer).
                self.respond(request_id, {"stopReason": "cancelled"})
            else:
                self.hanging_prompt = (request_id, sid)
            return
        response: JsonObject = {} if _flag("MOCK_OMIT_STOP") else {"stopReason": _env("MOCK_STOP") or "end_turn"}
        prompt_usage = _PROMPT_USAGE.get(_env("MOCK_USAGE") or "")
        if prompt_usage is not None:
            response["usage"] = prompt_usage
        self.respond(request_id, response)
        late = _env("MOCK_LATE_TEXT")
        if late is not None:
            self.update(sid, _chunk("agent_message_chunk", late))

    def ask_permission(self, sid: str, tool_call: JsonObject, options: list[JsonObject]) -> object:
        """Send ``session/request_permission``, wait for the answer, log its outcome; return the outcome."""
        answer = self.request(
            "session/request_permission", {"sessionId": sid, "toolCall": tool_call, "options": options}
        )
        result = answer.get("result")
        outcome = cast(JsonObject, result).get("outcome") if isinstance(result, dict) else None
        log = _env("MOCK_PERMISSION_LOG")
        if log:
            _append_line(log, compact_json(outcome))
        return outcome

    def probe(self, sid: str) -> str | None:
        method = _env("MOCK_PROBE_REQUEST")
        if not method:
            return None
        answer = self.request(method, {"sessionId": sid})
        if "result" in answer:
            return f"probe {method}: ok"
        error = answer.get("error")
        code = cast(JsonObject, error).get("code") if isinstance(error, dict) else None
        return f"probe {method}: {code}"

    def answer_text(self, prompt_text: str, probe_text: str | None, sid: str = "") -> str:
        if _flag("MOCK_SESSION_ECHO"):
            return self.book.echo(sid)
        huge = _env("MOCK_HUGE_CHUNK_MIB")
        if huge:
            return "x" * (int(huge) * 1048576)
        if self.echo_mode:
            return prompt_text
        if _flag("MOCK_ECHO_CWD"):
            return f"{os.getcwd()}\n{self.session_cwd}"
        echo_env = _env("MOCK_ECHO_ENV")
        if echo_env:
            value = os.environ.get(echo_env)
            return value if value is not None else f"<{echo_env} unset>"
        if probe_text is not None:
            return probe_text
        text = _env("MOCK_TEXT")
        return DEFAULT_TEXT if text is None else text

    def on_cancel(self) -> None:
        log = _env("MOCK_CANCEL_LOG")
        if log:
            _append_line(log, "cancel")
        if _flag("MOCK_CRASH_ON_CANCEL"):
            os._exit(EXIT_CRASH)
        if _flag("MOCK_IGNORE_CANCEL"):
            return
        if self.prompts_in_flight:
            self.cancel_requested = True
        if _flag("MOCK_PERMISSION_ON_CANCEL"):
            sid = self.hanging_prompt[1] if self.hanging_prompt else (self.session_id or "")
            tool_call: JsonObject = {"toolCallId": "mock-call", "title": "mock side effect", "kind": "execute"}
            self.ask_permission(sid, tool_call, [_ALLOW_OPTION, _REJECT_OPTION])
        if self.hanging_prompt is not None:
            request_id, _sid = self.hanging_prompt
            self.hanging_prompt = None
            self.respond(request_id, {"stopReason": "cancelled"})


def _is_response(message: JsonObject) -> bool:
    return "method" not in message and "id" in message and ("result" in message or "error" in message)


def _is_selected(outcome: object) -> bool:
    return isinstance(outcome, dict) and cast(JsonObject, outcome).get("outcome") == "selected"


def _chunk(kind: str, text: str) -> JsonObject:
    return {"sessionUpdate": kind, "content": {"type": "text", "text": text}}


def _on_stdin_eof() -> NoReturn:
    if _flag("MOCK_TRAP_SIGTERM") or _flag("MOCK_IGNORE_EOF"):
        _stay_alive_forever()
    flush = _env("MOCK_FLUSH_ON_EOF")
    if flush:
        delay_ms = _env("MOCK_FLUSH_DELAY_MS")
        time.sleep((150 if delay_ms is None else float(delay_ms)) / 1000)
        write_file_atomically(flush, "flushed")
    os._exit(EXIT_EOF)


def _exit_on_sigterm(signum: int, frame: object) -> None:
    sigterm_file = _env("MOCK_SIGTERM_FILE")
    if sigterm_file:
        write_file_atomically(sigterm_file, "sigterm")
    os._exit(EXIT_EOF)


def _note_sigterm(signum: int, frame: object) -> None:
    sigterm_file = _env("MOCK_SIGTERM_FILE")
    if sigterm_file:
        write_file_atomically(sigterm_file, "sigterm")  # and carry on: the trap survives SIGTERM


def _arm_process_switches() -> None:
    pid_file = _env("MOCK_GRANDCHILD_PID_FILE")
    if pid_file:
        spawn_grandchild(pid_file, setsid=_flag("MOCK_GRANDCHILD_SETSID"))
    ready = _env("MOCK_READY_FILE")
    if _flag("MOCK_TRAP_SIGTERM"):
        signal.signal(signal.SIGTERM, _note_sigterm if _env("MOCK_SIGTERM_FILE") else signal.SIG_IGN)
        if ready:
            write_file_atomically(ready, "trap-armed")
    elif _flag("MOCK_IGNORE_EOF"):
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
        if ready:
            write_file_atomically(ready, "ignore-eof-armed")


def _make_stdout_pipe_non_blocking() -> None:
    # Only a pipe: its open file description is ours alone, unlike an inherited terminal's.
    try:
        if stat.S_ISFIFO(os.fstat(1).st_mode):
            os.set_blocking(1, False)
    except OSError:
        pass


def main() -> NoReturn:
    """Run the agent until stdin EOF (or forever, with the EOF-deaf switches)."""
    echo_mode = not any(name.startswith("MOCK_") for name in os.environ)
    _make_stdout_pipe_non_blocking()
    _arm_process_switches()
    inbox: Inbox = queue.Queue()
    eof_seen = threading.Event()
    start_stdin_reader(inbox, eof_seen)
    _Agent(inbox=inbox, eof_seen=eof_seen, echo_mode=echo_mode).serve_forever()


if __name__ == "__main__":
    main()
