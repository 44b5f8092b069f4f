"""The per-run transcript and its frame delivery (docs/behaviour.md#stream-transcript to #stream-delivery-and-freeze,
acceptance 52–53).

The provider-driven scenarios (42–51) need real children; these pin the same rules on the journal directly.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from host.diagnostics import SubagentResult
from host.stream import (
    AcpChunkMapper,
    ChunkFrame,
    EventFrame,
    ReasoningDelta,
    RunJournal,
    StreamChunk,
    StreamFrame,
    TextDelta,
    ToolCallChunk,
)

ABORTED = SubagentResult(stop_reason="aborted")


def types_of(journal: RunJournal) -> list[str]:
    return [event.type for event in journal.transcript]


def frame_summary(frames: list[StreamFrame]) -> list[str]:
    return [frame.event.type if isinstance(frame, EventFrame) else f"chunk:{frame.chunk.index}" for frame in frames]


def open_journal(frames: list[StreamFrame] | None = None, run_id: str = "run-1") -> RunJournal:
    journal = RunJournal(run_id, "acp", "acp", frames.append if frames is not None else None)
    journal.publish()
    return journal


def cancelled_acp_stream() -> list[StreamChunk]:
    mapper = AcpChunkMapper()
    updates: list[dict[str, Any]] = [
        {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "thinking…"}},
        {"sessionUpdate": "tool_call", "toolCallId": "t1", "kind": "execute", "status": "pending"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress"},
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "partial"}},
    ]
    return [chunk for update in updates for chunk in mapper.map_update(update)]


def test_publish_delivers_run_start_first() -> None:
    frames: list[StreamFrame] = []
    journal = RunJournal("run-1", "dsh-sdk", "dsh-sdk", frames.append)

    journal.publish()
    journal.publish()

    assert len(frames) == 1
    assert isinstance(frames[0], EventFrame)
    assert frames[0].run_id == "run-1"
    assert frames[0].event.model_dump() == {
        "seq": 0,
        "type": "run/start",
        "data": {"run_id": "run-1", "provider": "dsh-sdk", "kind": "dsh-sdk"},
    }


def test_local_cancel_turns_the_delivered_prefix_into_an_interrupted_message_before_run_end() -> None:
    frames: list[StreamFrame] = []
    journal = open_journal(frames)
    stream = cancelled_acp_stream()
    for chunk in stream:
        journal.chunk(chunk)

    journal.finish(ABORTED, locally_cancelled=True)

    assert types_of(journal) == ["run/start", "assistant/message", "run/end"]
    message = journal.transcript[1]
    assert message.data == {
        "content": [{"type": "reasoning", "text": "thinking…"}, {"type": "text", "text": "partial"}],
        "stream": stream,
        "interrupted": True,
    }
    assert len(message.data["stream"]) == 4
    assert journal.transcript[2].data == {"stop_reason": "aborted"}
    assert frame_summary(frames) == [
        "run/start",
        "chunk:0",
        "chunk:1",
        "chunk:1",
        "chunk:2",
        "assistant/message",
        "run/end",
    ]
    assert [event.seq for event in journal.transcript] == [0, 1, 2]


def test_local_cancel_with_only_tool_calls_streamed_appends_an_attempt_with_the_stream() -> None:
    journal = open_journal()
    tool_calls = [
        ToolCallChunk(index=0, tool_call_id="t", kind="read", status="pending"),
        ToolCallChunk(index=0, tool_call_id="t", kind="read", status="completed"),
    ]
    for chunk in tool_calls:
        journal.chunk(chunk)

    journal.finish(ABORTED, locally_cancelled=True)

    assert types_of(journal) == ["run/start", "assistant/attempt", "run/end"]
    assert journal.transcript[1].data == {"stream": tool_calls}


def test_local_cancel_before_anything_streamed_appends_an_empty_attempt() -> None:
    journal = open_journal()

    journal.finish(ABORTED, locally_cancelled=True)

    assert [(event.type, event.data) for event in journal.transcript[1:]] == [
        ("assistant/attempt", {"stream": []}),
        ("run/end", {"stop_reason": "aborted"}),
    ]


def test_completed_run_appends_a_plain_message_without_interrupted() -> None:
    journal = open_journal()
    journal.chunk(TextDelta(index=0, text="mock child answer"))

    journal.finish(SubagentResult(output=[{"type": "text", "text": "mock child answer"}], stop_reason="completed"))

    message = journal.transcript[1]
    assert message.type == "assistant/message"
    assert message.data == {
        "content": [{"type": "text", "text": "mock child answer"}],
        "stream": [TextDelta(index=0, text="mock child answer")],
    }
    assert journal.transcript[2].data == {"stop_reason": "completed"}


@pytest.mark.parametrize("stop_reason", ["max-tokens", "refusal"])
def test_max_tokens_and_refusal_with_visible_content_append_a_message(stop_reason: str) -> None:
    journal = open_journal()
    journal.chunk(TextDelta(index=0, text="some"))
    journal.chunk(ToolCallChunk(index=1, tool_call_id="t", kind="read"))

    journal.finish(SubagentResult(stop_reason=stop_reason))

    assert journal.transcript[1].type == "assistant/message"
    expected: list[dict[str, Any]] = [{"type": "text", "text": "some"}]
    if stop_reason == "refusal":
        expected.append({"type": "tool-call", "tool_call_id": "t", "kind": "read", "status": None, "title": None})
    assert journal.transcript[1].data["content"] == expected


def test_max_tokens_with_only_tool_calls_appends_an_attempt() -> None:
    journal = open_journal()
    journal.chunk(ToolCallChunk(index=0, tool_call_id="t", kind="read"))

    journal.finish(SubagentResult(stop_reason="max-tokens"))

    assert types_of(journal) == ["run/start", "assistant/attempt", "run/end"]


def test_error_and_remote_abort_keep_the_stream_as_an_attempt_and_run_end_carries_the_diagnostic() -> None:
    diagnostic = "Subagent failure (provider: ACP; stage: process; category: process-exit; exit code: 17)"
    for result in (SubagentResult(stop_reason="error", diagnostic=diagnostic), ABORTED):
        journal = open_journal()
        journal.chunk(TextDelta(index=0, text="mock child answer"))

        journal.finish(result)

        assert journal.transcript[1].type == "assistant/attempt"
        assert journal.transcript[1].data == {"stream": [TextDelta(index=0, text="mock child answer")]}
        end = {"stop_reason": result.stop_reason} | ({"diagnostic": diagnostic} if result.diagnostic else {})
        assert journal.transcript[2].data == end


def test_chunks_after_the_freeze_are_neither_recorded_nor_delivered() -> None:
    frames: list[StreamFrame] = []
    journal = open_journal(frames)
    journal.chunk(TextDelta(index=0, text="kept"))

    journal.freeze()
    journal.chunk(TextDelta(index=0, text="late"))
    journal.finish(SubagentResult(output=[{"type": "text", "text": "kept"}], stop_reason="completed"))
    journal.chunk(TextDelta(index=0, text="later"))

    assert journal.frozen
    assert "late" not in json.dumps([frame.model_dump(mode="json") for frame in frames])
    assert frame_summary(frames)[-3:] == ["chunk:0", "assistant/message", "run/end"]
    assert journal.transcript[1].data["content"] == [{"type": "text", "text": "kept"}]


def test_finish_is_idempotent() -> None:
    frames: list[StreamFrame] = []
    journal = open_journal(frames)

    journal.finish(ABORTED, locally_cancelled=True)
    journal.finish(SubagentResult(stop_reason="completed"))

    assert types_of(journal) == ["run/start", "assistant/attempt", "run/end"]
    assert len(frames) == 3


def test_first_chunk_publishes_run_start_when_the_provider_did_not() -> None:
    frames: list[StreamFrame] = []
    journal = RunJournal("run-1", "acp", "acp", frames.append)

    journal.chunk(TextDelta(index=0, text="x"))

    assert frame_summary(frames) == ["run/start", "chunk:0"]


def test_a_raising_observer_is_logged_once_per_failure_and_changes_nothing(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[StreamFrame] = []

    def observer(frame: StreamFrame) -> None:
        seen.append(frame)
        if isinstance(frame, ChunkFrame):
            raise RuntimeError("observer broke")

    journal = RunJournal("run-x", "acp", "acp", observer)
    with caplog.at_level(logging.WARNING):
        journal.publish()
        journal.chunk(TextDelta(index=0, text="a"))
        journal.chunk(TextDelta(index=0, text="b"))
        journal.finish(SubagentResult(output=[{"type": "text", "text": "ab"}], stop_reason="completed"))

    assert [record.getMessage() for record in caplog.records] == [
        "subagent-host: stream observer failed for run run-x: observer broke",
        "subagent-host: stream observer failed for run run-x: observer broke",
    ]
    assert all(record.levelno == logging.WARNING for record in caplog.records)
    assert len(seen) == 5
    assert types_of(journal) == ["run/start", "assistant/message", "run/end"]
    assert journal.transcript[1].data["content"] == [{"type": "text", "text": "ab"}]


@pytest.mark.anyio
async def test_concurrent_runs_keep_their_own_order_and_run_ids() -> None:
    frames: list[StreamFrame] = []

    async def run(run_id: str, texts: list[str]) -> None:
        journal = RunJournal(run_id, "acp", "acp", frames.append)
        journal.publish()
        for index, text in enumerate(texts):
            await anyio.lowlevel.checkpoint()
            journal.chunk(ReasoningDelta(index=index, text=text))
        await anyio.lowlevel.checkpoint()
        journal.finish(SubagentResult(stop_reason="aborted"), locally_cancelled=True)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "run-a", ["a0", "a1", "a2"])
            tg.start_soon(run, "run-b", ["b0", "b1"])

    by_run = {run_id: [f for f in frames if f.run_id == run_id] for run_id in ("run-a", "run-b")}
    assert frame_summary(by_run["run-a"]) == [
        "run/start",
        "chunk:0",
        "chunk:1",
        "chunk:2",
        "assistant/message",
        "run/end",
    ]
    assert frame_summary(by_run["run-b"]) == ["run/start", "chunk:0", "chunk:1", "assistant/message", "run/end"]
    assert frame_summary(frames) != frame_summary(by_run["run-a"] + by_run["run-b"])
    for run_id, run_frames in by_run.items():
        texts = [f.chunk.text for f in run_frames if isinstance(f, ChunkFrame) and isinstance(f.chunk, ReasoningDelta)]
        assert all(text.startswith(run_id[-1]) for text in texts)
        events = [f.event for f in run_frames if isinstance(f, EventFrame)]
        assert [event.seq for event in events] == [0, 1, 2]


def test_frames_serialize_to_json_with_snake_case_fields() -> None:
    frames: list[StreamFrame] = []
    journal = open_journal(frames)
    journal.chunk(ToolCallChunk(index=0, tool_call_id="t", kind="read"))
    journal.finish(ABORTED, locally_cancelled=True)

    dumped = [frame.model_dump(mode="json") for frame in frames]

    assert dumped[1] == {
        "type": "chunk",
        "run_id": "run-1",
        "chunk": {"type": "tool-call", "index": 0, "tool_call_id": "t", "kind": "read", "status": None, "title": None},
    }
    assert dumped[2]["event"]["data"] == {"stream": [dumped[1]["chunk"]]}
