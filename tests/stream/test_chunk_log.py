"""The run's compact chunk record reads back exactly the chunks delivered, in order
(docs/behaviour.md#stream-transcript)."""

from __future__ import annotations

import json
import sys
import tracemalloc

import pytest

from host.diagnostics import SubagentResult
from host.stream import (
    ChunkFrame,
    EventFrame,
    ReasoningDelta,
    RunJournal,
    StreamChunk,
    StreamFrame,
    TextDelta,
    ToolCallChunk,
)
from host.stream._chunks import BlockEnd, BlockStart, text_delta
from host.stream._log import ChunkLog

MIXED: list[StreamChunk] = [
    TextDelta(index=0, text="a"),
    TextDelta(index=0, text="b"),
    ReasoningDelta(index=1, text="r"),
    ReasoningDelta(index=1, text="s"),
    TextDelta(index=2, text="c"),
    ToolCallChunk(index=3, tool_call_id="t", kind="read"),
    TextDelta(index=2, text="late"),
    BlockStart(index=4, block_type="image"),
    BlockEnd(index=5, block={"type": "text", "text": "end"}),
    TextDelta(index=0, text="d"),
]


def logged(chunks: list[StreamChunk]) -> ChunkLog:
    log = ChunkLog()
    for chunk in chunks:
        log.append(chunk)
    return log


def test_the_log_reads_back_every_chunk_in_order() -> None:
    log = logged(MIXED)
    assert len(log) == len(MIXED)
    assert list(log) == MIXED
    assert [log[i] for i in range(len(MIXED))] == MIXED
    assert log[-1] == MIXED[-1]
    assert log[2:5] == MIXED[2:5]
    assert log == MIXED
    assert MIXED == log
    assert log == tuple(MIXED)
    assert log != MIXED[:-1]
    assert repr(log) == repr(MIXED)
    with pytest.raises(IndexError):
        log[len(MIXED)]


def test_a_delta_subclass_is_kept_as_the_same_object() -> None:
    class Marked(TextDelta):
        pass

    marked = Marked(index=0, text="m")
    log = logged([TextDelta(index=0, text="a"), marked])
    assert log[1] is marked


def test_the_transcript_stream_equals_the_chunk_frames_and_serializes_as_a_list() -> None:
    frames: list[StreamFrame] = []
    journal = RunJournal("run-1", "acp", "acp", frames.append)
    for chunk in MIXED:
        journal.chunk(chunk)
    journal.finish(SubagentResult(stop_reason="completed"))
    message = journal.transcript[1]
    live = [frame.chunk for frame in frames if isinstance(frame, ChunkFrame)]
    assert message.data["stream"] == live == MIXED
    assert tuple(message.data["stream"]) == tuple(MIXED)
    dumped = json.loads(message.model_dump_json())
    assert dumped["data"]["stream"] == [chunk.model_dump() for chunk in MIXED]
    assert message.model_dump()["data"]["stream"] == [chunk.model_dump() for chunk in MIXED]
    event_frames = [frame for frame in frames if isinstance(frame, EventFrame)]
    assert [frame.event.type for frame in event_frames] == ["run/start", "assistant/message", "run/end"]


def test_recording_deltas_costs_a_pointer_each_not_a_model() -> None:
    # The texts are the decoder's strings, shared with the assembler: the record adds only its list slots.
    texts = [sys.intern(f"t{i % 10}") for i in range(100_000)]
    journal = RunJournal("run-1", "acp", "acp", None)
    journal.publish()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        for text in texts:
            journal.chunk(text_delta(0, text))
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # 100 000 deltas: one slot in the log and one in the assembler each, well under 40 bytes a chunk.
    assert after - before < 40 * len(texts)
