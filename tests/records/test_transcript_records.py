"""Each run leaves ``<state>/runs/<run_id>.jsonl``: the event order, the cancelled-stream prefix and what never enters.

Real fake children, driven through a recording ``Host``: a local cancel with text streamed records the interrupted
message before ``run/end {aborted}``; a cancel with only a tool call records an attempt; closed facts only.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import anyio
import pytest

from host import CancelController, Host, ToolSuccess
from host.config._loader import parse_config
from host.stream import ChunkFrame
from tests._provider_helpers import wait_for_file
from tests.records._helpers import PROCESS_TIMEOUT_S, acp_entry, read_jsonl, record_run, sdk_entry

pytestmark = pytest.mark.anyio


def _assert_record_shape(records: list[dict[str, object]]) -> None:
    assert [record["seq"] for record in records] == list(range(len(records)))
    for record in records:
        assert set(record) == {"seq", "type", "time", "data"}
        time = record["time"]
        assert isinstance(time, str) and time.endswith("Z") and "T" in time


async def test_cancel_mid_stream_with_text_records_the_interrupted_message_before_run_end(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    entry = acp_entry(MOCK_HANG="1", MOCK_THOUGHT="1", MOCK_TEXT="partial", MOCK_READY_FILE=str(ready))
    run = await record_run(tmp_path, entry, ready=ready, chunks=2)
    _assert_record_shape(run.records)
    assert run.types == ["run/start", "prompt", "handshake", "chunk", "chunk", "assistant/message", "run/end"]
    assert run.of_type("chunk") == [
        {"type": "reasoning-delta", "index": 0, "text": "thinking…"},
        {"type": "text-delta", "index": 1, "text": "partial"},
    ]
    message = run.of_type("assistant/message")[0]
    assert message["interrupted"] is True
    assert message["content"] == [{"type": "reasoning", "text": "thinking…"}, {"type": "text", "text": "partial"}]
    end = run.of_type("run/end")[0]
    assert end["stop_reason"] == "aborted" and "diagnostic" not in end
    assert isinstance(end["duration_ms"], int) and end["duration_ms"] >= 0


async def test_cancel_with_only_a_half_tool_call_records_an_attempt_and_no_message(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    entry = acp_entry(MOCK_HANG="1", MOCK_TOOL_CALL="1", MOCK_TEXT="", MOCK_READY_FILE=str(ready))
    run = await record_run(tmp_path, entry, ready=ready, chunks=2)
    assert run.types == ["run/start", "prompt", "handshake", "chunk", "chunk", "assistant/attempt", "run/end"]
    assert [chunk["type"] for chunk in run.of_type("chunk")] == ["tool-call", "tool-call"]
    assert len(run.of_type("assistant/attempt")[0]["stream"]) == 2
    assert run.of_type("run/end")[0]["stop_reason"] == "aborted"


async def test_cancel_with_reasoning_only_records_an_interrupted_reasoning_message(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    entry = acp_entry(MOCK_HANG="1", MOCK_THOUGHT="1", MOCK_TEXT="", MOCK_READY_FILE=str(ready))
    run = await record_run(tmp_path, entry, ready=ready, chunks=1)
    assert run.types == ["run/start", "prompt", "handshake", "chunk", "assistant/message", "run/end"]
    message = run.of_type("assistant/message")[0]
    assert message["content"] == [{"type": "reasoning", "text": "thinking…"}] and message["interrupted"] is True


async def test_completed_run_with_thinking_and_a_tool_call_records_start_prompt_stream_message_end(
    tmp_path: Path,
) -> None:
    run = await record_run(tmp_path, acp_entry(MOCK_THOUGHT="1", MOCK_TOOL_CALL="1"), task="plan the work")
    _assert_record_shape(run.records)
    assert run.types == [
        *("run/start", "prompt", "handshake", "chunk", "chunk", "chunk", "chunk", "assistant/message", "run/end")
    ]
    start = run.of_type("run/start")[0]
    assert start["provider"] == "child" and start["kind"] == "acp" and start["cwd"] == str(tmp_path)
    assert start["command"] == acp_entry()["command"] and start["args"] == acp_entry()["args"]
    assert isinstance(start["host_version"], str) and start["host_version"]
    assert start["run_id"] == run.jsonl.stem
    assert run.of_type("prompt") == [{"content": [{"type": "text", "text": "plan the work"}]}]
    tool_calls = [chunk for chunk in run.of_type("chunk") if chunk["type"] == "tool-call"]
    assert [(call["title"], call["kind"], call["status"]) for call in tool_calls] == [
        ("mock tool", "read", "pending"),
        ("mock tool", "read", "completed"),
    ]
    message = run.of_type("assistant/message")[0]
    assert "interrupted" not in message
    assert [block["type"] for block in message["content"]] == ["reasoning", "tool-call", "text"]
    assert run.of_type("run/end")[0]["stop_reason"] == "completed"
    # The live stream and the transcript agree: the same chunks, in the same order.
    live = [frame.chunk.model_dump(mode="json") for frame in run.frames if isinstance(frame, ChunkFrame)]
    assert live == run.of_type("chunk")


async def test_crash_records_an_attempt_and_run_end_with_the_diagnostic(tmp_path: Path) -> None:
    run = await record_run(tmp_path, acp_entry(MOCK_CRASH_AFTER_CHUNK="1"))
    assert run.types == ["run/start", "prompt", "handshake", "chunk", "assistant/attempt", "run/end"]
    end = run.of_type("run/end")[0]
    assert end["stop_reason"] == "error"
    assert end["diagnostic"].endswith("exit code: 17)")


async def test_consecutive_text_of_one_block_is_coalesced_into_one_chunk_record(tmp_path: Path) -> None:
    # The DSH SDK child streams one delta, then closes the block: a delta and a block-end record.
    run = await record_run(tmp_path, sdk_entry(FAKE_TEXT="sdk answer"))
    assert run.of_type("chunk") == [
        {"type": "text-delta", "index": 0, "text": "sdk answer"},
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": "sdk answer"}},
    ]
    assert run.of_type("run/start")[0]["kind"] == "dsh-sdk"


async def test_canaries_in_stderr_error_text_and_env_stay_out_of_the_transcript(tmp_path: Path) -> None:
    canary = "CANARY-stderr-7f3a"
    env_canary = "CANARY-env-91c2"
    entry = sdk_entry(FAKE_STDERR=canary, FAKE_PROMPT_ERROR="1", CANARY_VALUE=env_canary)
    run = await record_run(tmp_path, entry)
    text = run.jsonl.read_text(encoding="utf-8")
    assert run.of_type("run/end")[0]["stop_reason"] == "error"
    for planted in (canary, env_canary, "SECRET_TOKEN", "/private/path"):
        assert planted not in text
    stderr_file = run.jsonl.with_suffix(".stderr")
    stderr = stderr_file.read_bytes()
    assert canary.encode() in stderr
    for planted in (env_canary, "SECRET_TOKEN", "/private/path"):
        assert planted.encode() not in stderr
    assert stat.S_IMODE(os.stat(stderr_file).st_mode) == 0o600


async def test_state_dir_is_private_and_the_transcript_is_0600(tmp_path: Path) -> None:
    run = await record_run(tmp_path, acp_entry())
    assert stat.S_IMODE(os.stat(run.jsonl).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(run.jsonl.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(run.jsonl.parent.parent).st_mode) == 0o700
    # The fake ACP agent writes nothing to its (captured) stderr: no stderr file.
    assert not run.jsonl.with_suffix(".stderr").exists()


async def test_a_background_job_is_recorded_like_a_foreground_run(tmp_path: Path) -> None:
    config = parse_config({"providers": {"child": acp_entry(MOCK_TEXT="in the background")}})
    state = tmp_path / "state"
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            started = await host.execute(
                "delegate_child", {"task": "bg", "run_in_background": True}, signal=CancelController().signal
            )
            assert isinstance(started, ToolSuccess) and isinstance(started.value, dict)
            job_id = started.value["job_id"]
            assert isinstance(job_id, str)
            outcome = await host.wait_job(job_id)
    (transcript,) = sorted((state / "runs").glob("*.jsonl"))
    records = read_jsonl(transcript)
    assert [r["type"] for r in records] == ["run/start", "prompt", "handshake", "chunk", "assistant/message", "run/end"]
    assert records[-1]["data"]["stop_reason"] == "completed"
    # The job is traceable both ways: its start value and outcome name the run, the record names the job.
    assert transcript.stem == started.value["run_id"] == outcome.run_id
    assert records[0]["data"]["job_id"] == job_id and records[0]["data"]["label"] == "child"


async def test_a_background_job_killed_before_its_handshake_is_a_recorded_run(tmp_path: Path) -> None:
    ready, go = tmp_path / "ready", tmp_path / "go"  # the agent parks in `initialize`; GO never appears
    config = parse_config(
        {"providers": {"child": acp_entry(MOCK_INITIALIZE_READY=str(ready), MOCK_INITIALIZE_GO=str(go))}}
    )
    state = tmp_path / "state"
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            signal = CancelController().signal
            started = await host.execute(
                "delegate_child", {"task": "bg", "label": "nightly", "run_in_background": True}, signal=signal
            )
            assert isinstance(started, ToolSuccess) and isinstance(started.value, dict)
            job_id = started.value["job_id"]
            assert isinstance(job_id, str)
            await wait_for_file(ready)
            await host.execute("job_kill", {"job_id": job_id}, signal=signal)
            outcome = await host.wait_job(job_id)
    records = read_jsonl(state / "runs" / f"{started.value['run_id']}.jsonl")
    assert [r["type"] for r in records] == ["run/start", "prompt", "run/end"]
    assert records[0]["data"]["job_id"] == job_id and records[0]["data"]["label"] == "nightly"
    end = records[-1]["data"]
    assert (end["stop_reason"], end["cause"], outcome.status, outcome.run_id) == (
        "aborted",
        "cancelled",
        "killed",
        started.value["run_id"],
    )
    assert "handshake_ms" in end and "prompt_ms" not in end
