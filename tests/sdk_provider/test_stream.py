"""The per-run transcript and live frames of DSH SDK runs (docs/behaviour.md#stream-transcript to #stream-acceptance,
scenarios 49–54)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from host._exceptions import SdkRunFailure
from host.cancel import CancelController
from host.sdk_provider._run import start_sdk_run
from host.stream import ChunkFrame, EventFrame, StreamFrame, TextDelta
from host.stream._chunks import BlockEnd
from tests.sdk_provider._helpers import (
    PROCESS_TIMEOUT_S,
    D,
    make_request,
    open_run,
    runtime_spec,
    task_group,
    text_blocks,
)


@pytest.mark.anyio
async def test_a_cancel_after_a_chunk_records_an_interrupted_message_before_run_end(tmp_path: Path) -> None:
    frames: list[StreamFrame] = []
    chunk_seen = anyio.Event()
    result_order: list[int] = []

    def on_frame(frame: StreamFrame) -> None:
        frames.append(frame)
        if isinstance(frame, ChunkFrame):
            chunk_seen.set()

    controller = CancelController()
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(
            make_request(controller.signal, on_frame=on_frame), runtime_spec(tmp_path, FAKE_HANG_AFTER_CHUNK="1")
        ) as run:
            await chunk_seen.wait()
            controller.cancel("stop")
            await run.result()
            result_order.append(len(frames))
            transcript = run.transcript
    assert [e.type for e in transcript] == ["run/start", "assistant/message", "run/end"]
    message = transcript[1].data
    assert message["content"] == text_blocks("hello from fake runtime") and message["interrupted"] is True
    assert message["stream"] == [TextDelta(index=0, text="hello from fake runtime")]
    assert transcript[2].data == {"stop_reason": "aborted"}
    kinds = [f.type if isinstance(f, ChunkFrame) else f.event.type for f in frames]
    assert kinds == ["run/start", "chunk", "assistant/message", "run/end"]
    assert result_order == [4]


@pytest.mark.anyio
async def test_a_completed_run_records_the_message_from_its_block_end(tmp_path: Path) -> None:
    frames: list[StreamFrame] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(on_frame=frames.append), runtime_spec(tmp_path, FAKE_TEXT="answer")) as run:
            await run.result()
            transcript = run.transcript
    assert [e.type for e in transcript] == ["run/start", "assistant/message", "run/end"]
    assert transcript[1].data == {
        "content": text_blocks("answer"),
        "stream": [TextDelta(index=0, text="answer"), BlockEnd(index=0, block={"type": "text", "text": "answer"})],
    }
    assert transcript[2].data == {"stop_reason": "completed"}
    assert all(f.run_id == run.id for f in frames)
    assert isinstance(frames[-1], EventFrame) and frames[-1].event.type == "run/end"


@pytest.mark.anyio
async def test_a_child_error_records_an_attempt_and_run_end_carries_the_diagnostic(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), runtime_spec(tmp_path, FAKE_REASON_KIND="error")) as run:
            result = await run.result()
            transcript = run.transcript
    assert [e.type for e in transcript] == ["run/start", "assistant/attempt", "run/end"]
    assert transcript[2].data == {"stop_reason": "error", "diagnostic": D("session-run", "child-error")}
    assert result.diagnostic == D("session-run", "child-error")


@pytest.mark.anyio
async def test_pre_receipt_text_never_reaches_the_stream(tmp_path: Path) -> None:
    frames: list[StreamFrame] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(
            make_request(on_frame=frames.append), runtime_spec(tmp_path, FAKE_PRE_RECEIPT_NOISE="1")
        ) as run:
            await run.result()
    assert "noise" not in repr(frames)


@pytest.mark.anyio
async def test_concurrent_runs_keep_their_own_frame_order_and_run_ids(tmp_path: Path) -> None:
    frames: dict[str, list[StreamFrame]] = {"a": [], "b": []}
    ids: dict[str, str] = {}

    async def one(key: str) -> None:
        async with open_run(make_request(on_frame=frames[key].append), runtime_spec(tmp_path, FAKE_TEXT=key)) as run:
            ids[key] = run.id
            await run.result()

    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with anyio.create_task_group() as group:
            group.start_soon(one, "a")
            group.start_soon(one, "b")
    for key, seen in frames.items():
        assert {f.run_id for f in seen} == {ids[key]}
        kinds = [f.type if isinstance(f, ChunkFrame) else f.event.type for f in seen]
        assert kinds == ["run/start", "chunk", "chunk", "assistant/message", "run/end"]


@pytest.mark.anyio
async def test_a_raising_observer_is_contained(tmp_path: Path) -> None:
    def on_frame(frame: StreamFrame) -> None:
        raise RuntimeError("observer broke")

    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(on_frame=on_frame), runtime_spec(tmp_path, FAKE_TEXT="fine")) as run:
            result = await run.result()
    assert result.to_json() == {"output": text_blocks("fine"), "stop_reason": "completed"}


@pytest.mark.anyio
async def test_a_failed_start_delivers_no_frames(tmp_path: Path) -> None:
    frames: list[StreamFrame] = []
    spec = runtime_spec(tmp_path, command="/nonexistent/dsh-runtime", args=())
    with anyio.fail_after(5):
        async with task_group() as group:
            with pytest.raises(SdkRunFailure):
                await start_sdk_run(make_request(on_frame=frames.append), spec, task_group=group)
    assert frames == []
