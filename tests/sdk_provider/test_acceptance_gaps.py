"""Audit of issue 4: spec bullets of sdk-provider.md §3–§5 that no other test pinned, against real runtimes.

The runtimes are the fake DSH runtime with one behaviour patched, or small stdlib scripts written to ``tmp_path``
(frames written by a descendant after the runtime exited, an unanswered ``shutdown``, planted secrets in a child's
``LlmFailure`` and in JSON-RPC error ``data``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from host._exceptions import AggregateError, SdkRunFailure, StartAbortedError, TransportClosedError
from host.cancel import CancelController
from host.sdk_provider import SdkClient, start_sdk_run
from tests.conftest import REPO_ROOT
from tests.sdk_provider._helpers import (
    PROCESS_TIMEOUT_S,
    D,
    R,
    RecordingSink,
    assert_no_secrets,
    json_lines,
    make_request,
    open_run,
    pid_alive,
    run_to_result,
    runtime_spec,
    task_group,
    text_blocks,
    wait_for_file,
)
from tests.sdk_provider._seams import ForwardingClient, recording_factory

# The fake runtime with patches selected by AUDIT_* variables (each one documented where it is applied).
_PATCHED_FAKE = f"""
import json, os, sys
sys.path.insert(0, {str(REPO_ROOT)!r})
import fake_runtimes.dsh_runtime as rt

SECRET = "LlmFailure at /private/path SECRET_TOKEN"
Runtime = rt._FakeRuntime

if os.environ.get("AUDIT_PROMPT_RECORD"):  # record every session/prompt params object, one JSON line each
    original_prompt = Runtime._prompt
    def record_prompt(self, request_id, params):
        with open(os.environ["AUDIT_PROMPT_RECORD"], "a", encoding="utf-8") as file:
            file.write(json.dumps(params) + "\\n")
        original_prompt(self, request_id, params)
    setattr(Runtime, "_prompt", record_prompt)

if os.environ.get("AUDIT_INTERRUPTED_MESSAGE"):  # every assistant/message carries data.interrupted = true
    original_event = Runtime._event
    def interrupted_event(self, sid, event_type, data=rt._OMIT):
        if event_type == "assistant/message" and isinstance(data, dict):
            data = dict(data, interrupted=True)
        original_event(self, sid, event_type, data)
    setattr(Runtime, "_event", interrupted_event)

if os.environ.get("AUDIT_SECRET_FAILURES"):  # the child's error reason and every JSON-RPC error carry secrets
    original_reason = rt._reason
    def secret_reason(kind, malformed):
        if kind == "error" and malformed is None:
            return {{"kind": "error", "error": {{"message": SECRET, "code": "SECRET_TOKEN", "status": 500}}}}
        return original_reason(kind, malformed)
    rt._reason = secret_reason
    original_error = Runtime._error
    def secret_error(self, request_id, error):
        original_error(self, request_id, dict(error, message=SECRET, data={{"where": SECRET}}))
    setattr(Runtime, "_error", secret_error)

if os.environ.get("AUDIT_IGNORE_SHUTDOWN"):  # never answer shutdown (stdin EOF still ends the runtime)
    original_dispatch = Runtime._dispatch
    def dispatch(self, request_id, method, params):
        if method != "shutdown":
            original_dispatch(self, request_id, method, params)
    setattr(Runtime, "_dispatch", dispatch)

rt.main()
"""

# A runtime that acknowledges the prompt and then exits; a descendant that inherited its stdout finishes the turn
# once the runtime has been reaped by the host (``AUDIT_LATE_FRAMES=1``), or holds stdout open for a minute after
# one streamed chunk (``AUDIT_HOLD_STDOUT=1``). The descendant's pid goes to ``AUDIT_PID_FILE``.
_EXITING_RUNTIME = r"""
import json, os, subprocess, sys

def line(message):
    return json.dumps(dict(message, jsonrpc="2.0")) + "\n"

def event(sid, seq, event_type, data):
    return line({"method": "session.event", "params": {"sessionId": sid, "event": {
        "type": event_type, "seq": seq, "time": 0, "data": data}}})

LATE = r'''
import os, sys, time
parent = int(sys.argv[1])
while os.path.exists(f"/proc/{parent}"):  # until the host has reaped the runtime: the exit edge is behind us
    time.sleep(0.001)
time.sleep(0.025)  # past the host's exit poll, well inside the 100 ms drain window
sys.stdout.write(sys.argv[2])
sys.stdout.flush()
'''

for raw in sys.stdin:
    message = json.loads(raw)
    method, request_id = message.get("method"), message.get("id")
    if method == "initialize":
        sys.stdout.write(line({"id": request_id, "result": {"serverInfo": {"name": "exiting", "version": "1"}}}))
        sys.stdout.flush()
    elif method == "session/prompt":
        sid = message["params"]["sessionId"]
        first = line({"id": request_id, "result": {"messageId": "m-1"}})
        first += event(sid, 0, "agent/inbox/spliced", {"inserted": [{"id": "m-1"}]})
        chunk = {"turn": 0, "step": 0, "chunk": {"type": "text-delta", "index": 0, "text": "late answer"}}
        if os.environ.get("AUDIT_HOLD_STDOUT"):
            first += event(sid, 1, "assistant/chunk", chunk)
            argv = [sys.executable, "-c", "import time; time.sleep(60)"]
        else:
            rest = event(sid, 1, "turn/start", {"turn": 0}) + event(sid, 2, "assistant/chunk", chunk)
            message_data = {"turn": 0, "step": 0, "message": {"content": [{"type": "text", "text": "late answer"}]}}
            rest += event(sid, 3, "assistant/message", message_data)
            rest += event(sid, 4, "turn/end", {"turn": 0, "reason": {"kind": "completed"}})
            rest += line({"method": "session.status", "params": {"sessionId": sid, "status": "idle"}})
            argv = [sys.executable, "-c", LATE, str(os.getpid()), rest]
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(os.environ["AUDIT_PID_FILE"] + ".tmp", "w") as file:
            file.write(str(child.pid))
        os.replace(os.environ["AUDIT_PID_FILE"] + ".tmp", os.environ["AUDIT_PID_FILE"])
        sys.stdout.write(first)
        sys.stdout.flush()
        os._exit(5)
"""


def _script(tmp_path: Path, name: str, source: str) -> list[str]:
    path = tmp_path / name
    path.write_text(source, encoding="utf-8")
    return [str(path)]


@pytest.mark.anyio
async def test_frames_a_descendant_writes_after_the_runtime_exited_are_still_delivered(tmp_path: Path) -> None:
    # §4.1: input ends at stdout EOF or 100 ms after the observed exit, whichever is first; frames in between count.
    pid_file = tmp_path / "late.pid"
    spec = runtime_spec(
        tmp_path,
        args=_script(tmp_path, "exiting.py", _EXITING_RUNTIME),
        AUDIT_LATE_FRAMES="1",
        AUDIT_PID_FILE=str(pid_file),
    )
    result = await run_to_result(spec)
    assert result.to_json() == {"output": text_blocks("late answer"), "stop_reason": "completed"}


@pytest.mark.anyio
async def test_a_runtime_exiting_while_a_descendant_holds_stdout_fails_as_transport_without_waiting_for_eof(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "holder.pid"
    spec = runtime_spec(
        tmp_path,
        args=_script(tmp_path, "exiting.py", _EXITING_RUNTIME),
        AUDIT_HOLD_STDOUT="1",
        AUDIT_PID_FILE=str(pid_file),
    )
    sink = RecordingSink()
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), spec, on_error=sink) as run:
            holder = int(await wait_for_file(pid_file))
            # The holder keeps stdout open for 60 s: only the 100 ms post-exit bound can end the input in time.
            with anyio.fail_after(5):
                result = await run.result()
    assert result.to_json() == {
        "output": text_blocks("late answer"),
        "stop_reason": "error",
        "diagnostic": D("session-run", "transport"),
    }
    assert [type(e) for e in sink.errors] == [TransportClosedError]
    assert "exit code: 5" in str(sink.errors[0])
    assert not pid_alive(holder)


@pytest.mark.anyio
async def test_the_prompt_goes_to_a_private_session_with_every_block_verbatim(tmp_path: Path) -> None:
    record = tmp_path / "prompts.jsonl"
    request = make_request(text="look at this")
    image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    resource = {"type": "resource_link", "uri": "file:///tmp/x", "name": "x", "annotations": {"priority": 1}}
    request.prompt.extend([image, resource])
    spec = runtime_spec(tmp_path, args=_script(tmp_path, "patched.py", _PATCHED_FAKE), AUDIT_PROMPT_RECORD=str(record))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(request, spec) as run:
            result = await run.result()
            run_id = run.id
    (recorded,) = json_lines(record)
    assert isinstance(recorded, dict)
    params = cast("dict[str, Any]", recorded)
    assert set(params) == {"sessionId", "contentBlocks"}
    assert re.fullmatch(r"session-[0-9a-f]{32}", params["sessionId"])
    assert params["sessionId"] != f"session-{run_id}" and run_id not in params["sessionId"]
    assert params["contentBlocks"] == [{"type": "text", "text": "look at this"}, image, resource]
    assert result.stop_reason == "completed"


@pytest.mark.anyio
async def test_an_interrupted_assistant_message_still_counts_as_output(tmp_path: Path) -> None:
    spec = runtime_spec(
        tmp_path,
        args=_script(tmp_path, "patched.py", _PATCHED_FAKE),
        AUDIT_INTERRUPTED_MESSAGE="1",
        FAKE_TEXT="kept despite interruption",
    )
    result = await run_to_result(spec)
    assert result.to_json() == {"output": text_blocks("kept despite interruption"), "stop_reason": "completed"}


@pytest.mark.anyio
async def test_a_childs_llm_failure_and_error_data_secrets_never_reach_results_or_startup_errors(
    tmp_path: Path,
) -> None:
    patched = _script(tmp_path, "patched.py", _PATCHED_FAKE)
    secret_stderr = "stderr /private/path SECRET_TOKEN"
    child_error = await run_to_result(
        runtime_spec(
            tmp_path, args=patched, AUDIT_SECRET_FAILURES="1", FAKE_REASON_KIND="error", FAKE_STDERR=secret_stderr
        )
    )
    assert child_error.to_json() == {
        "output": text_blocks("hello from fake runtime"),
        "stop_reason": "error",
        "diagnostic": D("session-run", "child-error"),
    }
    prompt_sink = RecordingSink()
    prompt_error = await run_to_result(
        runtime_spec(tmp_path, args=patched, AUDIT_SECRET_FAILURES="1", FAKE_PROMPT_ERROR="1"), on_error=prompt_sink
    )
    assert prompt_error.to_json() == {"output": [], "stop_reason": "error", "diagnostic": D("session-run", "protocol")}
    # The planted payload did reach the host side (so the checks below are not vacuous).
    assert "SECRET_TOKEN" in str(prompt_sink.errors[0])
    init_sink = RecordingSink()
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            with pytest.raises(SdkRunFailure) as caught:
                await start_sdk_run(
                    make_request(),
                    runtime_spec(tmp_path, args=patched, AUDIT_SECRET_FAILURES="1", FAKE_INIT_ERROR="1"),
                    task_group=group,
                    on_error=init_sink,
                )
    assert str(caught.value) == R("initialize", "protocol")
    assert "SECRET_TOKEN" in json.dumps(getattr(init_sink.errors[0], "data", None))
    assert_no_secrets(str(child_error.to_json()), str(prompt_error.to_json()), str(caught.value))


@pytest.mark.anyio
async def test_a_failed_shutdown_request_is_noted_in_the_host_only_stderr_tail(tmp_path: Path) -> None:
    spec = runtime_spec(tmp_path, args=_script(tmp_path, "patched.py", _PATCHED_FAKE), AUDIT_IGNORE_SHUTDOWN="1")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            client = SdkClient(spec)
            try:
                await client.start(group)
            finally:
                await client.aclose()  # never raises for a failed shutdown: stdin EOF still ends the runtime
    assert client.stderr_tail == (
        "shutdown request failed: shutdown timed out after 100ms waiting for the DSH SDK runtime",
    )
    pid = client.pid
    assert pid is not None and not pid_alive(pid)


@pytest.mark.anyio
async def test_a_subscription_made_after_close_is_born_failed(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            client = SdkClient(runtime_spec(tmp_path))
            try:
                await client.start(group)
            finally:
                await client.aclose()
            subscription = client.subscribe("session-late")
            with pytest.raises(TransportClosedError) as caught:
                await subscription.receive()
            subscription.close()
    assert str(caught.value).startswith("DSH SDK runtime closed")


@pytest.mark.anyio
async def test_a_cancel_during_the_handshake_makes_no_sink_call_and_reaps_the_child(tmp_path: Path) -> None:
    # §5.8: "cancelled during the handshake, cleanup OK" has 0 sink calls and the child is reaped by aclose().
    made: list[ForwardingClient] = []
    sink = RecordingSink()
    controller = CancelController()
    raised: list[BaseException] = []
    record = tmp_path / "init.jsonl"

    async def start(group: anyio.abc.TaskGroup) -> None:
        try:
            await start_sdk_run(
                make_request(controller.signal),
                runtime_spec(tmp_path, FAKE_HANG_INIT="1", FAKE_RECORD_INIT=str(record)),
                task_group=group,
                on_error=sink,
                client_factory=recording_factory(ForwardingClient, made),
            )
        except (StartAbortedError, AggregateError) as exc:
            raised.append(exc)

    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            async with anyio.create_task_group() as starter:
                starter.start_soon(start, group)
                await wait_for_file(record)  # the runtime has received initialize and will never answer
                controller.cancel("stop")
    assert [type(e) for e in raised] == [StartAbortedError]
    assert sink.calls == []
    pid = made[0].inner.pid
    assert pid is not None and not pid_alive(pid) and made[0].aclose_calls == 1
