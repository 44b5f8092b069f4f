"""The fake DSH SDK runtime, driven as a real child over stdio (docs/behaviour.md#sdk-fake-runtime)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final, cast

import anyio
import anyio.abc
import psutil
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from tests._provider_helpers import wait_for_file, wait_until_gone

from ..conftest import FAKE_DSH_RUNTIME, PYTHON

# Every await is bounded; real-process tests get a wider bound than the 5 s standard because an interpreter cold
# start on a loaded 2-core CI machine can take well over a second.
_BOUND: Final = 10

_MAX_LINE: Final = 2 << 20  # a `FAKE_PRE_RECEIPT_FLOOD_MIB` line holds 1 MiB of text
_SID: Final = "session-0123"
_DEFAULT_TEXT: Final = "hello from fake runtime"
_SERVER_INFO: Final = {"serverInfo": {"name": "deepseek-harness-sdk-runtime", "version": "0.0.1"}}
_MESSAGE_SOURCE: Final = {"kind": "model", "provider": "fake", "model": "fake"}

Frame = dict[str, Any]


class _Driver:
    """A tiny test-side JSON-RPC driver over the runtime's stdio."""

    def __init__(self, process: anyio.abc.Process) -> None:
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        self.process = process
        self._stdin = process.stdin
        self._stdout = BufferedByteReceiveStream(process.stdout)
        self._stderr = process.stderr

    async def send(self, frame: Mapping[str, object]) -> None:
        await self._stdin.send((json.dumps(frame) + "\n").encode())

    async def send_raw(self, data: bytes) -> None:
        await self._stdin.send(data)

    async def request(self, method: str, params: Mapping[str, object] | None = None, request_id: int = 1) -> None:
        frame: Frame = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            frame["params"] = dict(params)
        await self.send(frame)

    async def receive(self) -> Frame:
        """Read one stdout frame; every stdout line must be a JSON-RPC 2.0 object."""
        line = await self._stdout.receive_until(b"\n", _MAX_LINE)
        frame = json.loads(line)
        assert isinstance(frame, dict)
        typed = cast(Frame, frame)
        assert typed["jsonrpc"] == "2.0"
        return typed

    async def receive_through(self, request_id: int) -> list[Frame]:
        """Read frames up to and including the response to ``request_id``."""
        frames: list[Frame] = []
        while True:
            frame = await self.receive()
            frames.append(frame)
            if "method" not in frame and frame.get("id") == request_id:
                return frames

    async def receive_to_eof(self) -> list[Frame]:
        frames: list[Frame] = []
        while True:
            try:
                frames.append(await self.receive())
            except (anyio.EndOfStream, anyio.IncompleteRead):
                return frames

    async def call(self, method: str, params: Mapping[str, object] | None = None, request_id: int = 1) -> list[Frame]:
        await self.request(method, params, request_id)
        return await self.receive_through(request_id)

    async def initialize(self) -> None:
        assert await self.call("initialize", {"cwd": "/", "provider": "p", "model": "m"}, 0) == [
            _response(0, _SERVER_INFO)
        ]

    async def prompt(self, text: str = "task", request_id: int = 1) -> list[Frame]:
        return await self.call("session/prompt", _prompt_params(text), request_id)

    async def close_stdin(self) -> None:
        await self._stdin.aclose()

    async def wait_exit(self) -> int:
        """Wait for the runtime to exit and return its exit code (negative for a signal)."""
        return await self.process.wait()

    async def read_stderr(self) -> str:
        chunks: list[bytes] = []
        while True:
            try:
                chunks.append(await self._stderr.receive())
            except anyio.EndOfStream:
                return b"".join(chunks).decode()


def _child_env(switches: Mapping[str, str]) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("FAKE_")}
    env.update(switches)
    return env


@asynccontextmanager
async def _open_runtime(
    switches: Mapping[str, str] | None = None, *, cwd: Path | None = None
) -> AsyncGenerator[_Driver]:
    process = await anyio.open_process(
        [PYTHON, str(FAKE_DSH_RUNTIME)],
        env=_child_env(switches or {}),
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        yield _Driver(process)
    finally:
        with anyio.CancelScope(shield=True), anyio.move_on_after(_BOUND):
            if process.returncode is None:
                try:
                    process.kill()
                except ProcessLookupError:
                    pass  # already exited and reaped
            await process.aclose()


def _prompt_params(text: str = "task") -> dict[str, object]:
    return {"sessionId": _SID, "contentBlocks": [{"type": "text", "text": text}]}


def _response(request_id: int, result: object) -> Frame:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _error(request_id: int, code: int, message: str) -> Frame:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _event(seq: int, event_type: str, data: object, sid: str = _SID) -> Frame:
    event = {"type": event_type, "seq": seq, "time": 0, "data": data}
    return {"jsonrpc": "2.0", "method": "session.event", "params": {"sessionId": sid, "event": event}}


def _status(status: str, sid: str = _SID) -> Frame:
    return {"jsonrpc": "2.0", "method": "session.status", "params": {"sessionId": sid, "status": status}}


def _receipt(seq: int, message_id: str) -> Frame:
    inserted: list[Frame] = [{"id": message_id, "role": "user", "content": [], "source": {"kind": "user"}}]
    return _event(seq, "agent/inbox/spliced", {"target": "next-turn", "start": 0, "inserted": inserted})


def _chunk(seq: int, text: str) -> Frame:
    return _event(
        seq, "assistant/chunk", {"turn": 0, "step": 0, "chunk": {"type": "text-delta", "index": 0, "text": text}}
    )


def _message(seq: int, content: object, sid: str = _SID) -> Frame:
    message = {"id": f"fake-assistant-{seq}", "role": "assistant", "content": content, "source": _MESSAGE_SOURCE}
    return _event(seq, "assistant/message", {"turn": 0, "step": 0, "message": message}, sid)


def _text(text: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": text}]


def _events(frames: list[Frame]) -> list[Frame]:
    return [frame["params"]["event"] for frame in frames if frame.get("method") == "session.event"]


def _turn_end_reasons(frames: list[Frame]) -> list[object]:
    return [event["data"]["reason"] for event in _events(frames) if event["type"] == "turn/end"]


def _completed_turn(text: str, first_seq: int = 0, message_id: str = "fake-user-0") -> list[Frame]:
    s = first_seq
    return [
        _receipt(s, message_id),
        _status("running"),
        _event(s + 1, "turn/start", {"turn": 0}),
        _chunk(s + 2, text),
        _message(s + 3, _text(text)),
        _event(s + 4, "turn/end", {"turn": 0, "reason": {"kind": "completed"}}),
        _status("idle"),
    ]


# -- the default one-run sequence --------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_default_run_emits_the_one_run_sequence_with_a_process_global_seq() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_REASON_KIND": "completed"}) as runtime:
            await runtime.initialize()
            first = await runtime.prompt(request_id=1)
            second = await runtime.prompt(request_id=2)
            shutdown = await runtime.call("shutdown", {}, 3)
            code = await runtime.wait_exit()

    assert first == [*_completed_turn(_DEFAULT_TEXT), _response(1, {"messageId": "fake-user-0"})]
    assert second == [
        *_completed_turn(_DEFAULT_TEXT, first_seq=5, message_id="fake-user-5"),
        _response(2, {"messageId": "fake-user-5"}),
    ]
    assert shutdown == [_response(3, {})]
    assert code == 0


@pytest.mark.anyio
async def test_without_any_fake_switch_the_text_echoes_the_prompt_text_blocks() -> None:
    blocks = [
        {"type": "text", "text": "Summarise "},
        {"type": "image", "data": "AAAA", "mimeType": "image/png"},
        {"type": "text", "text": "the repository"},
    ]
    with anyio.fail_after(_BOUND):
        async with _open_runtime() as runtime:
            frames = await runtime.call("session/prompt", {"sessionId": _SID, "contentBlocks": blocks})

    assert _events(frames)[2]["data"]["chunk"]["text"] == "Summarise the repository"
    assert _events(frames)[3]["data"]["message"]["content"] == _text("Summarise the repository")


@pytest.mark.anyio
async def test_any_fake_switch_even_an_unknown_one_turns_the_echo_into_the_default_text() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_SOMETHING_ELSE": "1"}) as runtime:
            frames = await runtime.prompt("echo me")

    assert _events(frames)[3]["data"]["message"]["content"] == _text(_DEFAULT_TEXT)


@pytest.mark.anyio
async def test_fake_text_echo_cwd_and_echo_env_build_the_assistant_text(tmp_path: Path) -> None:
    switches = {
        "FAKE_TEXT": "done",
        "FAKE_ECHO_CWD": "1",
        "FAKE_ECHO_ENV": "PRESENT_NAME, ABSENT_NAME",
        "PRESENT_NAME": "present-value",
    }
    with anyio.fail_after(_BOUND):
        async with _open_runtime(switches, cwd=tmp_path) as runtime:
            frames = await runtime.prompt()

    expected = f"cwd={await anyio.Path(tmp_path).resolve()}\nPRESENT_NAME=present-value\nABSENT_NAME=\ndone"
    assert _events(frames)[3]["data"]["message"]["content"] == _text(expected)


@pytest.mark.anyio
async def test_session_prompt_without_a_string_session_id_uses_the_empty_session() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_TEXT": "x"}) as runtime:
            frames = await runtime.call("session/prompt", {"sessionId": 7})

    assert {frame["params"]["sessionId"] for frame in frames if "method" in frame} == {""}


@pytest.mark.anyio
async def test_blank_garbage_notifications_and_responses_are_skipped_and_unknown_methods_get_32603() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_TEXT": "x"}) as runtime:
            await runtime.send_raw(b"\n   \nnot json\n[1, 2]\n\xff\xfe\n")
            await runtime.send({"jsonrpc": "2.0", "method": "initialize", "params": {}})
            await runtime.send({"jsonrpc": "2.0", "id": 99, "result": {}})
            frames = await runtime.call("nope/method", {}, 5)

    assert frames == [_error(5, -32603, "unknown method: nope/method")]


# -- process-level behaviour -------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_stdin_eof_exits_zero() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_TEXT": "x"}) as runtime:
            await runtime.initialize()
            await runtime.close_stdin()
            assert await runtime.receive_to_eof() == []
            assert await runtime.wait_exit() == 0


@pytest.mark.anyio
async def test_stdin_eof_ends_the_process_while_a_prompt_hangs() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_HANG_PROMPT": "1"}) as runtime:
            await runtime.request("session/prompt", _prompt_params())
            assert [await runtime.receive(), await runtime.receive()] == [
                _receipt(0, "fake-user-0"),
                _status("running"),
            ]
            await runtime.close_stdin()
            assert await runtime.receive_to_eof() == []
            assert await runtime.wait_exit() == 0


@pytest.mark.anyio
async def test_ignore_eof_keeps_the_runtime_serving_after_shutdown_and_sigterm_writes_the_file_then_exits_zero(
    tmp_path: Path,
) -> None:
    sigterm_file = tmp_path / "sigterm"
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_IGNORE_EOF": "1", "FAKE_SIGTERM_FILE": str(sigterm_file)}) as runtime:
            assert await runtime.call("shutdown", {}, 1) == [_response(1, {})]
            assert await runtime.call("still/here", {}, 2) == [_error(2, -32603, "unknown method: still/here")]
            await runtime.close_stdin()
            # Still alive after EOF: a signal is delivered to a live process, and its handler leaves the proof.
            runtime.process.send_signal(signal.SIGTERM)
            assert await runtime.wait_exit() == 0

    assert sigterm_file.read_text() == "sigterm\n"


@pytest.mark.anyio
async def test_ignore_shutdown_never_answers_shutdown_and_keeps_serving_until_stdin_eof() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_IGNORE_SHUTDOWN": "1"}) as runtime:
            await runtime.request("shutdown", {}, 1)
            # No answer to the shutdown comes before the next request's.
            assert await runtime.call("still/here", {}, 2) == [_error(2, -32603, "unknown method: still/here")]
            await runtime.close_stdin()
            assert await runtime.receive_to_eof() == []
            assert await runtime.wait_exit() == 0


@pytest.mark.anyio
async def test_sigterm_exits_zero_by_default() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_TEXT": "x"}) as runtime:
            await runtime.initialize()
            runtime.process.send_signal(signal.SIGTERM)
            assert await runtime.wait_exit() == 0


@pytest.mark.anyio
async def test_trap_sigterm_writes_the_file_and_survives_until_sigkill(tmp_path: Path) -> None:
    sigterm_file = tmp_path / "sigterm"
    switches = {"FAKE_IGNORE_EOF": "1", "FAKE_TRAP_SIGTERM": "1", "FAKE_SIGTERM_FILE": str(sigterm_file)}
    with anyio.fail_after(_BOUND):
        async with _open_runtime(switches) as runtime:
            await runtime.initialize()
            runtime.process.send_signal(signal.SIGTERM)
            assert await wait_for_file(sigterm_file) == "sigterm\n"
            assert await runtime.call("alive", {}, 4) == [_error(4, -32603, "unknown method: alive")]
            runtime.process.kill()
            assert await runtime.wait_exit() == -signal.SIGKILL


@pytest.mark.anyio
async def test_sigint_exits_130() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_TEXT": "x"}) as runtime:
            await runtime.initialize()
            runtime.process.send_signal(signal.SIGINT)
            assert await runtime.wait_exit() == 130


@pytest.mark.anyio
async def test_exit_before_init_writes_stderr_then_exits_3() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_EXIT_BEFORE_INIT": "1", "FAKE_STDERR": "dying"}) as runtime:
            assert await runtime.receive_to_eof() == []
            assert await runtime.read_stderr() == "dying\n"
            assert await runtime.wait_exit() == 3


@pytest.mark.anyio
async def test_stderr_no_newline_writes_an_unterminated_fragment() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_STDERR_NO_NEWLINE": "fragment"}) as runtime:
            await runtime.initialize()
            await runtime.close_stdin()
            assert await runtime.wait_exit() == 0
            assert await runtime.read_stderr() == "fragment"


# -- initialize --------------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_record_init_appends_each_initialize_params_as_one_compact_json_line(tmp_path: Path) -> None:
    record = tmp_path / "init.jsonl"
    params = {"cwd": "/work", "provider": "fake-provider", "model": "fake-model", "maxTokens": 4096}
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_RECORD_INIT": str(record)}) as runtime:
            assert await runtime.call("initialize", params, 1) == [_response(1, _SERVER_INFO)]
            assert await runtime.call("initialize", {"cwd": "/x"}, 2) == [_response(2, _SERVER_INFO)]

    compact = json.dumps(params, separators=(",", ":"))
    assert record.read_text() == f'{compact}\n{{"cwd":"/x"}}\n'


@pytest.mark.anyio
async def test_record_init_still_records_when_initialize_hangs(tmp_path: Path) -> None:
    record = tmp_path / "init.jsonl"
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_RECORD_INIT": str(record), "FAKE_HANG_INIT": "1"}) as runtime:
            await runtime.request("initialize", {"cwd": "/w"}, 1)
            # The loop goes on without answering initialize: the next frame is the answer to request 2.
            assert await runtime.call("later", {}, 2) == [_error(2, -32603, "unknown method: later")]

    assert record.read_text() == '{"cwd":"/w"}\n'


_INIT_ERROR: Final = {
    "jsonrpc": "2.0",
    "id": 1,
    "error": {"code": 7, "message": "scripted init failure", "data": {"hint": "fake"}},
}


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("switches", "expected"),
    [
        ({"FAKE_INIT_ERROR": "1"}, _INIT_ERROR),
        ({"FAKE_MALFORMED": "1"}, _response(1, {})),
        ({"FAKE_TEXT": "x"}, _response(1, _SERVER_INFO)),
        # The first matching rule wins.
        ({"FAKE_INIT_ERROR": "1", "FAKE_MALFORMED": "1", "FAKE_ECHO_CWD_IN_INIT": "1"}, _INIT_ERROR),
    ],
)
async def test_initialize_variants_answer_as_scripted(switches: dict[str, str], expected: Frame) -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime(switches) as runtime:
            assert await runtime.call("initialize", {"cwd": "/"}, 1) == [expected]


@pytest.mark.anyio
async def test_echo_cwd_in_init_reports_the_physical_cwd_as_the_version(tmp_path: Path) -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_ECHO_CWD_IN_INIT": "1"}, cwd=tmp_path) as runtime:
            frames = await runtime.call("initialize", {"cwd": "/"}, 1)

    server_info = {"name": "deepseek-harness-sdk-runtime", "version": str(await anyio.Path(tmp_path).resolve())}
    assert frames == [_response(1, {"serverInfo": server_info})]


@pytest.mark.anyio
async def test_init_ready_and_go_answer_only_after_the_go_file_exists(tmp_path: Path) -> None:
    ready, go = tmp_path / "ready", tmp_path / "go"
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_INIT_READY": str(ready), "FAKE_INIT_GO": str(go)}) as runtime:
            await runtime.request("initialize", {"cwd": "/"}, 1)
            assert await wait_for_file(ready) == "ready\n"
            go.touch()
            assert await runtime.receive() == _response(1, _SERVER_INFO)


@pytest.mark.anyio
async def test_stdin_eof_ends_the_process_while_initialize_waits_for_go(tmp_path: Path) -> None:
    ready, go = tmp_path / "ready", tmp_path / "go"
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_INIT_READY": str(ready), "FAKE_INIT_GO": str(go)}) as runtime:
            await runtime.request("initialize", {"cwd": "/"}, 1)
            await wait_for_file(ready)
            await runtime.close_stdin()
            assert await runtime.receive_to_eof() == []
            assert await runtime.wait_exit() == 0


# -- session/prompt variants -------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_prompt_error_answers_32603_after_the_receipt_and_running() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_PROMPT_ERROR": "1"}) as runtime:
            frames = await runtime.prompt()

    assert frames == [
        _receipt(0, "fake-user-0"),
        _status("running"),
        _error(1, -32603, "scripted prompt failure /private/path SECRET_TOKEN"),
    ]


@pytest.mark.anyio
async def test_pre_receipt_noise_emits_idle_and_a_noise_message_before_the_receipt() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_PRE_RECEIPT_NOISE": "1"}) as runtime:
            frames = await runtime.prompt()

    assert frames[:3] == [_status("idle"), _message(0, _text("noise")), _receipt(1, "fake-user-0")]
    assert frames[-1] == _response(1, {"messageId": "fake-user-0"})
    assert frames[-2] == _status("idle")


@pytest.mark.anyio
async def test_a_pre_receipt_flood_sends_mebibyte_chunks_before_the_receipt_then_runs_the_turn() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_PRE_RECEIPT_FLOOD_MIB": "2"}) as runtime:
            frames = await runtime.prompt()

    flood = _chunk(0, "x" * (1 << 20))
    assert frames[:3] == [flood, _chunk(1, "x" * (1 << 20)), _receipt(2, "fake-user-0")]
    assert frames[-1] == _response(1, {"messageId": "fake-user-0"})
    assert frames[-2] == _status("idle")


@pytest.mark.anyio
async def test_stream_then_malformed_streams_a_chunk_then_answers_an_empty_result() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_STREAM_THEN_MALFORMED": "1"}) as runtime:
            frames = await runtime.prompt()

    assert frames == [
        _receipt(0, "fake-user-0"),
        _status("running"),
        _chunk(1, "streamed then cut short"),
        _response(1, {}),
    ]


@pytest.mark.anyio
@pytest.mark.parametrize("switch", ["FAKE_MALFORMED_PROMPT", "FAKE_MALFORMED"])
async def test_malformed_prompt_answers_an_empty_result_without_a_turn(switch: str) -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({switch: "1"}) as runtime:
            frames = await runtime.prompt()

    assert frames == [_receipt(0, "fake-user-0"), _status("running"), _response(1, {})]


@pytest.mark.anyio
@pytest.mark.parametrize(("fake_text", "partial"), [(None, "partial before exit"), ("my partial", "my partial")])
async def test_exit_during_prompt_answers_streams_then_exits_17(fake_text: str | None, partial: str) -> None:
    switches = {"FAKE_EXIT_DURING_PROMPT": "1"} | ({} if fake_text is None else {"FAKE_TEXT": fake_text})
    with anyio.fail_after(_BOUND):
        async with _open_runtime(switches) as runtime:
            await runtime.request("session/prompt", _prompt_params())
            frames = await runtime.receive_to_eof()
            assert await runtime.wait_exit() == 17

    assert frames == [
        _receipt(0, "fake-user-0"),
        _status("running"),
        _response(1, {"messageId": "fake-user-0"}),
        _chunk(1, partial),
        _message(2, _text(partial)),
    ]


@pytest.mark.anyio
async def test_hang_after_chunk_answers_after_the_chunk_and_never_ends_the_turn() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_HANG_AFTER_CHUNK": "1"}) as runtime:
            frames = await runtime.prompt()
            # Nothing more for this turn: the next frame is the answer to a later request.
            after = await runtime.call("next", {}, 2)

    assert frames == [
        _receipt(0, "fake-user-0"),
        _status("running"),
        _event(1, "turn/start", {"turn": 0}),
        _chunk(2, _DEFAULT_TEXT),
        _response(1, {"messageId": "fake-user-0"}),
    ]
    assert after == [_error(2, -32603, "unknown method: next")]


@pytest.mark.anyio
async def test_hang_prompt_emits_the_receipt_and_running_then_nothing() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_HANG_PROMPT": "1"}) as runtime:
            await runtime.request("session/prompt", _prompt_params(), 1)
            frames = await runtime.call("later", {}, 2)

    # The prompt is never answered: the frames after running are the answer to a later request.
    assert frames == [_receipt(0, "fake-user-0"), _status("running"), _error(2, -32603, "unknown method: later")]


# -- run_turn variants -------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_malformed_event_sends_a_non_object_event_then_idles() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_MALFORMED_EVENT": "1"}) as runtime:
            frames = await runtime.prompt()

    bad = {"jsonrpc": "2.0", "method": "session.event", "params": {"sessionId": _SID, "event": 42}}
    assert frames == [
        _receipt(0, "fake-user-0"),
        _status("running"),
        bad,
        _status("idle"),
        _response(1, {"messageId": "fake-user-0"}),
    ]


@pytest.mark.anyio
async def test_server_request_probe_prepends_the_answer_code_and_defers_requests_read_while_waiting() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_SERVER_REQUEST": "client/whatever", "FAKE_TEXT": "x"}) as runtime:
            await runtime.request("session/prompt", _prompt_params(), 1)
            frames = [await runtime.receive(), await runtime.receive(), await runtime.receive()]
            probe = frames[2]
            assert probe["method"] == "client/whatever"
            assert probe["params"] == {}
            # A request read while the probe waits is answered only after the prompt completes.
            await runtime.request("queued", {}, 2)
            await runtime.send(
                {"jsonrpc": "2.0", "id": probe["id"], "error": {"code": -32601, "message": "method not found: x"}}
            )
            rest = await runtime.receive_through(2)

    assert frames[:2] == [_receipt(0, "fake-user-0"), _status("running")]
    assert "id" in probe
    text = "probe client/whatever: -32601\nx"
    assert rest == [
        *_completed_turn(text)[2:],
        _response(1, {"messageId": "fake-user-0"}),
        _error(2, -32603, "unknown method: queued"),
    ]


@pytest.mark.anyio
async def test_server_request_probe_reports_ok_for_a_result_answer() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_SERVER_REQUEST": "client/ok"}) as runtime:
            await runtime.request("session/prompt", _prompt_params(), 1)
            probe = [await runtime.receive() for _ in range(3)][2]
            await runtime.send({"jsonrpc": "2.0", "id": probe["id"], "result": {}})
            frames = await runtime.receive_through(1)

    assert _events(frames)[1]["data"]["chunk"]["text"] == f"probe client/ok: ok\n{_DEFAULT_TEXT}"


@pytest.mark.anyio
async def test_unknown_event_and_two_turns_precede_the_main_turn() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_UNKNOWN_EVENT": "1", "FAKE_TWO_TURNS": "1"}) as runtime:
            frames = await runtime.prompt()

    first_error = {"message": "first turn failed", "code": "UNKNOWN"}
    assert frames[2:5] == [
        _event(1, "future/event", {"x": 1}),
        _event(2, "turn/start", {"turn": 0}),
        _event(3, "turn/end", {"turn": 0, "reason": {"kind": "error", "error": first_error}}),
    ]
    assert frames[5:] == [*_completed_turn(_DEFAULT_TEXT, first_seq=3)[2:], _response(1, {"messageId": "fake-user-0"})]


@pytest.mark.anyio
async def test_malformed_chunk_follows_the_good_chunk_and_ends_the_turn_early() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_MALFORMED_CHUNK": "1", "FAKE_TEXT": "before bad chunk"}) as runtime:
            frames = await runtime.prompt()

    assert frames[2:] == [
        _event(1, "turn/start", {"turn": 0}),
        _chunk(2, "before bad chunk"),
        _event(3, "assistant/chunk", {"turn": 0, "step": 0}),
        _status("idle"),
        _response(1, {"messageId": "fake-user-0"}),
    ]


@pytest.mark.anyio
async def test_malformed_message_carries_string_content_and_ends_the_turn_early() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_MALFORMED_MESSAGE": "1"}) as runtime:
            frames = await runtime.prompt()

    assert frames[4:] == [_message(3, "not-an-array"), _status("idle"), _response(1, {"messageId": "fake-user-0"})]


@pytest.mark.anyio
async def test_message_without_data_sends_a_data_less_assistant_message() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_MESSAGE_WITHOUT_DATA": "1"}) as runtime:
            frames = await runtime.prompt()

    bare_message = {"type": "assistant/message", "seq": 3, "time": 0}
    assert frames[2:] == [
        _event(1, "turn/start", {"turn": 0}),
        _chunk(2, _DEFAULT_TEXT),
        {"jsonrpc": "2.0", "method": "session.event", "params": {"sessionId": _SID, "event": bare_message}},
        _status("idle"),
        _response(1, {"messageId": "fake-user-0"}),
    ]


@pytest.mark.anyio
async def test_empty_message_sends_a_usage_only_message_and_still_ends_the_turn() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_EMPTY_MESSAGE": "1", "FAKE_REASON_KIND": "max-tokens"}) as runtime:
            frames = await runtime.prompt()

    assert frames[3:6] == [
        _chunk(2, _DEFAULT_TEXT),
        _message(3, []),
        _event(4, "turn/end", {"turn": 0, "reason": {"kind": "max-tokens"}}),
    ]


@pytest.mark.anyio
async def test_subagent_emits_child_session_traffic_after_the_root_turn_end() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_SUBAGENT": "1"}) as runtime:
            frames = await runtime.prompt()

    child = f"{_SID}-child"
    said = _text("child says hi")
    finished = {
        "provider": "fake",
        "agentId": "fake-child-agent",
        "parentSessionId": _SID,
        "childSessionId": child,
        "status": "ok",
        "stopReason": "completed",
        "lastAssistantMessage": said,
    }
    assert frames[6:] == [
        {"jsonrpc": "2.0", "method": "subagent.started", "params": {"parentSessionId": _SID, "childSessionId": child}},
        _message(5, said, sid=child),
        {"jsonrpc": "2.0", "method": "subagent.finished", "params": finished},
        _status("idle"),
        _response(1, {"messageId": "fake-user-0"}),
    ]


# -- turn-end reasons --------------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("switches", "reason"),
    [
        ({"FAKE_REASON_KIND": "completed"}, {"kind": "completed"}),
        ({"FAKE_REASON_KIND": "max-tokens"}, {"kind": "max-tokens"}),
        ({"FAKE_REASON_KIND": "blocked"}, {"kind": "blocked"}),
        ({"FAKE_REASON_KIND": "interrupted"}, {"kind": "interrupted"}),
        ({"FAKE_REASON_KIND": "private/path/SECRET_TOKEN"}, {"kind": "private/path/SECRET_TOKEN"}),
        (
            {"FAKE_REASON_KIND": "error"},
            {"kind": "error", "error": {"message": "scripted child error", "code": "UNKNOWN"}},
        ),
        ({"FAKE_REASON_KIND": "aborted"}, {"kind": "aborted", "reason": {"kind": "user"}}),
        (
            {"FAKE_REASON_KIND": "aborted", "FAKE_ABORT_REASON_KIND": "disposed"},
            {"kind": "aborted", "reason": {"kind": "disposed"}},
        ),
        (
            {"FAKE_REASON_KIND": "aborted", "FAKE_ABORT_REASON_KIND": "parent"},
            {"kind": "aborted", "reason": {"kind": "parent"}},
        ),
        (
            {"FAKE_REASON_KIND": "aborted", "FAKE_ABORT_REASON_KIND": "hook"},
            {"kind": "aborted", "reason": {"kind": "hook", "reason": "scripted hook abort"}},
        ),
        ({"FAKE_MALFORMED_REASON": "aborted"}, {"kind": "aborted"}),
        ({"FAKE_MALFORMED_REASON": "abort-unknown"}, {"kind": "aborted", "reason": {"kind": "future"}}),
        ({"FAKE_MALFORMED_REASON": "hook"}, {"kind": "aborted", "reason": {"kind": "hook"}}),
        ({"FAKE_MALFORMED_REASON": "1"}, "not-a-reason-envelope"),
    ],
)
async def test_turn_end_reason_follows_the_reason_switches(switches: dict[str, str], reason: object) -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime(switches) as runtime:
            frames = await runtime.prompt()

    assert _turn_end_reasons(frames) == [reason]
    assert _events(frames)[-1] == {"type": "turn/end", "seq": 4, "time": 0, "data": {"turn": 0, "reason": reason}}


@pytest.mark.anyio
@pytest.mark.parametrize(("malformed", "event_tail"), [("no-data", {}), ("null-data", {"data": None})])
async def test_data_less_malformed_reasons_send_turn_end_without_usable_data(
    malformed: str, event_tail: dict[str, object]
) -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_MALFORMED_REASON": malformed}) as runtime:
            frames = await runtime.prompt()

    assert _events(frames)[-1] == {"type": "turn/end", "seq": 4, "time": 0, **event_tail}


@pytest.mark.anyio
async def test_reason_kind_none_emits_no_turn_end() -> None:
    with anyio.fail_after(_BOUND):
        async with _open_runtime({"FAKE_REASON_KIND": "none", "FAKE_MALFORMED_REASON": "1"}) as runtime:
            frames = await runtime.prompt()

    assert [event["type"] for event in _events(frames)] == [
        "agent/inbox/spliced",
        "turn/start",
        "assistant/chunk",
        "assistant/message",
    ]
    assert frames[-2:] == [_status("idle"), _response(1, {"messageId": "fake-user-0"})]


# -- grandchildren -----------------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("setsid", [False, True])
async def test_grandchild_pid_file_names_a_live_sleeper_on_dev_null(tmp_path: Path, setsid: bool) -> None:
    pid_file = tmp_path / "grandchild.pid"
    switches = {"FAKE_GRANDCHILD_PID_FILE": str(pid_file)} | ({"FAKE_GRANDCHILD_SETSID": "1"} if setsid else {})
    with anyio.fail_after(_BOUND):
        async with _open_runtime(switches) as runtime:
            pid = int(await wait_for_file(pid_file))
            try:
                await runtime.initialize()
                assert psutil.Process(pid).ppid() == runtime.process.pid
                assert (os.getsid(pid) == pid) is setsid
                assert {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in (0, 1, 2)} == {"/dev/null"}
            finally:
                os.kill(pid, signal.SIGKILL)
                await wait_until_gone(pid)
            await runtime.close_stdin()
            assert await runtime.wait_exit() == 0
