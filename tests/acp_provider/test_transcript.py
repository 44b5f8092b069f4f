"""The per-run transcript and frame ordering of ACP runs (docs/behaviour.md#stream-transcript to
#stream-delivery-and-freeze, scenarios 42–48, 52–54)."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest

from host._exceptions import AcpRunFailure
from host.acp_provider._run import start_acp_run
from host.cancel import CancelController
from host.run._contracts import SubagentRun
from host.stream import ChunkFrame, EventFrame, StreamFrame
from tests.acp_provider._helpers import (
    PROCESS_TIMEOUT_S,
    agent_spec,
    make_request,
    open_run,
    task_group,
    wait_for_file,
)

F = "Subagent failure (provider: ACP; "


def types_of(run: SubagentRun) -> list[str]:
    return [event.type for event in run.transcript]


async def cancelled_run(tmp_path: Path, frames: list[StreamFrame], **env: str) -> tuple[SubagentRun, list[str]]:
    """Cancel a hanging run after its ready file; return it and the frame kinds seen when result() returned."""
    controller = CancelController()
    ready = tmp_path / "ready"
    seen_at_result: list[str] = []
    spec = agent_spec(tmp_path, env, MOCK_HANG="1", MOCK_READY_FILE=str(ready))
    async with open_run(make_request(controller.signal, on_frame=frames.append), spec) as run:
        await wait_for_file(ready)
        controller.cancel()
        await run.result()
        seen_at_result.extend(frame.type for frame in frames)
    return run, seen_at_result


@pytest.mark.anyio
async def test_a_cancelled_stream_finalizes_its_visible_prefix_as_an_interrupted_message(tmp_path: Path) -> None:
    frames: list[StreamFrame] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        run, seen = await cancelled_run(tmp_path, frames, MOCK_THOUGHT="1", MOCK_TOOL_CALL="1", MOCK_TEXT="partial")
    assert types_of(run) == ["run/start", "assistant/message", "run/end"]
    message = run.transcript[1].data
    assert message["content"] == [{"type": "reasoning", "text": "thinking…"}, {"type": "text", "text": "partial"}]
    assert message["interrupted"] is True
    assert len(message["stream"]) == 4
    assert run.transcript[2].data == {"stop_reason": "aborted"}
    chunk_positions = [i for i, frame in enumerate(frames) if isinstance(frame, ChunkFrame)]
    end_position = next(
        i for i, frame in enumerate(frames) if isinstance(frame, EventFrame) and frame.event.type == "run/end"
    )
    assert len(chunk_positions) == 4
    assert max(chunk_positions) < end_position
    assert seen[-1] == "event"
    assert len(seen) == end_position + 1


@pytest.mark.anyio
async def test_a_cancelled_stream_of_only_tool_calls_is_an_attempt(tmp_path: Path) -> None:
    frames: list[StreamFrame] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        run, _ = await cancelled_run(tmp_path, frames, MOCK_TOOL_CALL="1", MOCK_TEXT="")
    assert types_of(run) == ["run/start", "assistant/attempt", "run/end"]
    assert [chunk.type for chunk in run.transcript[1].data["stream"]] == ["tool-call", "tool-call"]


@pytest.mark.anyio
async def test_a_cancelled_run_that_streamed_nothing_is_an_empty_attempt(tmp_path: Path) -> None:
    frames: list[StreamFrame] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        run, _ = await cancelled_run(tmp_path, frames, MOCK_TEXT="")
    assert run.transcript[1].type == "assistant/attempt"
    assert run.transcript[1].data == {"stream": []}


@pytest.mark.anyio
async def test_a_completed_run_records_its_message_and_end(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), agent_spec(tmp_path, MOCK_STOP="end_turn")) as run:
            await run.result()
    assert types_of(run) == ["run/start", "assistant/message", "run/end"]
    message = run.transcript[1].data
    assert message["content"] == [{"type": "text", "text": "mock child answer"}]
    assert len(message["stream"]) == 1
    assert "interrupted" not in message
    assert run.transcript[2].data == {"stop_reason": "completed"}
    assert run.transcript[0].data["run_id"] == run.id


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("env", "diagnostic", "chunks"),
    [
        (
            {"MOCK_STOP": "max_turn_requests"},
            F + "stage: prompt; category: remote-limit; stop reason: max_turn_requests)",
            1,
        ),
        ({"MOCK_CRASH_AFTER_CHUNK": "1"}, F + "stage: process; category: process-exit; exit code: 17)", 1),
    ],
    ids=["remote-limit", "crash-after-chunk"],
)
async def test_an_error_run_records_an_attempt_and_the_result_diagnostic(
    tmp_path: Path, env: dict[str, str], diagnostic: str, chunks: int
) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), agent_spec(tmp_path, env)) as run:
            result = await run.result()
    assert types_of(run) == ["run/start", "assistant/attempt", "run/end"]
    assert len(run.transcript[1].data["stream"]) == chunks
    assert run.transcript[2].data == {"stop_reason": "error", "diagnostic": diagnostic}
    assert result.diagnostic == diagnostic


@pytest.mark.anyio
async def test_a_raising_observer_is_logged_per_failure_and_changes_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)

    def explode(frame: StreamFrame) -> None:
        raise RuntimeError("observer broke")

    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(on_frame=explode), agent_spec(tmp_path, MOCK_STOP="end_turn")) as run:
            result = await run.result()
    assert result.to_json() == {"output": [{"type": "text", "text": "mock child answer"}], "stop_reason": "completed"}
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    # run/start, one chunk, assistant/message, run/end: four frames, four failures.
    assert lines == [f"subagent-host: stream observer failed for run {run.id}: observer broke"] * 4


@pytest.mark.anyio
async def test_concurrent_runs_keep_their_own_frame_order_and_run_ids(tmp_path: Path) -> None:
    frames: dict[str, list[StreamFrame]] = {"a": [], "b": []}
    runs: dict[str, SubagentRun] = {}

    async def one(key: str) -> None:
        async with open_run(make_request(on_frame=frames[key].append), agent_spec(tmp_path, MOCK_THOUGHT="1")) as run:
            runs[key] = run
            await run.result()

    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with anyio.create_task_group() as group:
            group.start_soon(one, "a")
            group.start_soon(one, "b")
    for key, run in runs.items():
        assert {frame.run_id for frame in frames[key]} == {run.id}
        kinds = [frame.event.type if isinstance(frame, EventFrame) else "chunk" for frame in frames[key]]
        assert kinds == ["run/start", "chunk", "chunk", "assistant/message", "run/end"]
    assert runs["a"].id != runs["b"].id


@pytest.mark.anyio
async def test_a_failed_start_delivers_no_frames(tmp_path: Path) -> None:
    frames: list[StreamFrame] = []
    spec = agent_spec(tmp_path, command="/nonexistent/acp-agent-binary", args=[])
    with anyio.fail_after(5):
        async with task_group() as group:
            with pytest.raises(AcpRunFailure):
                await start_acp_run(make_request(on_frame=frames.append), spec, task_group=group)
    assert frames == []
