"""Robustness against hostile or broken runtimes: floods, huge frames, foreign sessions, early idles, dead runtimes,
and planted secrets that must never become model-visible."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest

from host._exceptions import AggregateError, SdkRunFailure, TransportClosedError
from host.sdk_provider import DshSdkProvider
from host.sdk_provider._run import start_sdk_run
from host.sdk_provider.client._client import STDERR_TAIL_LINES
from tests.sdk_provider._helpers import (
    PROCESS_TIMEOUT_S,
    D,
    RecordingSink,
    assert_no_secrets,
    make_request,
    open_run,
    pid_alive,
    run_to_result,
    runtime_entry,
    runtime_spec,
    task_group,
    text_blocks,
    wait_for_file,
)
from tests.sdk_provider._helpers import script_args as _script
from tests.sdk_provider._seams import ForwardingClient, ReapThenRaiseClient, recording_factory

PATCHED = str(Path(__file__).resolve().parent / "children" / "patched_runtime.py")


@pytest.mark.anyio
async def test_a_ten_mib_stderr_flood_keeps_a_bounded_tail_and_the_run_completes(tmp_path: Path) -> None:
    made: list[ForwardingClient] = []
    spec = runtime_spec(tmp_path, args=[PATCHED], PATCH_STDERR_FLOOD_BYTES=str(10 * 1024 * 1024), FAKE_TEXT="survived")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            run = await start_sdk_run(
                make_request(), spec, task_group=group, client_factory=recording_factory(ForwardingClient, made)
            )
            result = await run.result()
            tail = made[0].inner.stderr_tail
            await run.dispose()
    assert result.to_json() == {"output": text_blocks("survived"), "stop_reason": "completed"}
    assert 0 < len(tail) <= STDERR_TAIL_LINES
    assert_no_secrets(str(result.to_json()))


@pytest.mark.anyio
async def test_an_eight_mib_assistant_message_is_delivered_whole(tmp_path: Path) -> None:
    size = 8 * 1024 * 1024
    spec = runtime_spec(tmp_path, args=[PATCHED], PATCH_HUGE_TEXT_BYTES=str(size), FAKE_REASON_KIND="completed")
    result = await run_to_result(spec)
    assert result.stop_reason == "completed"
    assert len(result.output) == 1 and len(result.output[0]["text"]) == size


@pytest.mark.anyio
async def test_interleaved_foreign_sessions_never_reach_the_run(tmp_path: Path) -> None:
    result = await run_to_result(
        runtime_spec(tmp_path, args=[PATCHED], PATCH_FOREIGN_SESSIONS="1", FAKE_REASON_KIND="completed")
    )
    assert result.to_json() == {"output": text_blocks("hello from fake runtime"), "stop_reason": "completed"}


@pytest.mark.anyio
async def test_a_foreign_error_turn_does_not_contaminate_the_root(tmp_path: Path) -> None:
    # The foreign copy of every root event arrives first, including a foreign idle before the root's own turn ends.
    env = {"PATCH_FOREIGN_SESSIONS": "1", "FAKE_TWO_TURNS": "1", "FAKE_TEXT": "root answer"}
    result = await run_to_result(runtime_spec(tmp_path, args=[PATCHED], env=env))
    assert result.to_json() == {"output": text_blocks("root answer"), "stop_reason": "completed"}


@pytest.mark.anyio
async def test_an_idle_before_the_receipt_does_not_end_the_run(tmp_path: Path) -> None:
    result = await run_to_result(runtime_spec(tmp_path, FAKE_PRE_RECEIPT_NOISE="1", FAKE_TEXT="after receipt"))
    assert result.to_json() == {"output": text_blocks("after receipt"), "stop_reason": "completed"}


@pytest.mark.anyio
async def test_a_runtime_exiting_mid_turn_keeps_the_partial_output_as_transport(tmp_path: Path) -> None:
    env = {"FAKE_EXIT_DURING_PROMPT": "1", "FAKE_TEXT": "kept", "FAKE_STDERR": "/private/path SECRET_TOKEN"}
    sink = RecordingSink()
    result = await run_to_result(runtime_spec(tmp_path, env=env), on_error=sink)
    assert result.to_json() == {
        "output": text_blocks("kept"),
        "stop_reason": "error",
        "diagnostic": D("session-run", "transport"),
    }
    # The raw, host-only error holds the exit code and the stderr tail; the result holds neither.
    assert "exit code: 17" in str(sink.errors[0]) and "SECRET_TOKEN" in str(sink.errors[0])


@pytest.mark.anyio
async def test_secrets_in_stderr_errors_and_child_messages_never_reach_results_or_raised_texts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    secret = "/private/path SECRET_TOKEN"
    texts: list[str] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            for env in (
                {"FAKE_PROMPT_ERROR": "1", "FAKE_STDERR": secret},
                {"FAKE_REASON_KIND": "error", "FAKE_STDERR": secret},
                {"FAKE_REASON_KIND": f"{secret}"},
            ):
                provider = DshSdkProvider(runtime_entry(env=env), task_group=group)
                run = await provider.start(make_request(parent_cwd=str(tmp_path)))
                texts.append(str((await run.result()).to_json()))
                await run.dispose()
            for env in (
                {"FAKE_INIT_ERROR": "1", "FAKE_STDERR": secret},
                {"FAKE_EXIT_BEFORE_INIT": "1", "FAKE_STDERR": secret},
            ):
                with pytest.raises(SdkRunFailure) as caught:
                    await DshSdkProvider(runtime_entry(env=env), task_group=group).start(
                        make_request(parent_cwd=str(tmp_path))
                    )
                texts.append(str(caught.value))
            with pytest.raises(AggregateError) as aggregate:
                await start_sdk_run(
                    make_request(),
                    runtime_spec(tmp_path, FAKE_MALFORMED="1", FAKE_STDERR=secret),
                    task_group=group,
                    client_factory=recording_factory(ReapThenRaiseClient, []),
                )
            texts.append(str(aggregate.value))
    assert_no_secrets(*texts)
    # The host log is where raw text belongs.
    assert any("SECRET_TOKEN" in r.getMessage() for r in caplog.records)


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


@pytest.mark.anyio
async def test_frames_a_descendant_writes_after_the_runtime_exited_are_still_delivered(tmp_path: Path) -> None:
    # docs/behaviour.md#sdk-client-spawn: input ends at stdout EOF or 100 ms after the observed exit, whichever is
    # first; frames in between count.
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
