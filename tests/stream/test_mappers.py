"""The ACP and DSH SDK chunk mappings (docs/behaviour.md#stream-acp-mapping, acceptance 38–41)."""

from __future__ import annotations

from typing import Any

from host.stream import (
    AcpChunkMapper,
    BlockAssembler,
    ReasoningDelta,
    SdkChunkMapper,
    StreamChunk,
    TextDelta,
    ToolCallChunk,
    stream_chunk_adapter,
)
from host.stream._chunks import BlockEnd, BlockStart


def message(text: str) -> dict[str, Any]:
    return {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}


def thought(text: str) -> dict[str, Any]:
    return {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": text}}


def map_all(mapper: AcpChunkMapper, *updates: dict[str, Any]) -> list[StreamChunk]:
    return [chunk for update in updates for chunk in mapper.map_update(update)]


def test_acp_thought_tool_call_update_and_messages_map_to_indexed_chunks() -> None:
    chunks = map_all(
        AcpChunkMapper(),
        thought("a"),
        {"sessionUpdate": "tool_call", "toolCallId": "c1", "kind": "execute", "status": "pending", "title": "Run"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed"},
        message("b"),
        message("c"),
    )

    assert chunks == [
        ReasoningDelta(index=0, text="a"),
        ToolCallChunk(index=1, tool_call_id="c1", kind="execute", status="pending", title="Run"),
        ToolCallChunk(index=1, tool_call_id="c1", kind="execute", status="completed", title="Run"),
        TextDelta(index=2, text="b"),
        TextDelta(index=2, text="c"),
    ]


def test_acp_thought_between_messages_splits_the_text_into_two_blocks() -> None:
    chunks = map_all(AcpChunkMapper(), message("a"), thought("t"), message("b"))

    assert chunks == [TextDelta(index=0, text="a"), ReasoningDelta(index=1, text="t"), TextDelta(index=2, text="b")]
    assembler = BlockAssembler()
    for chunk in chunks:
        assembler.feed(chunk)
    assert [block["type"] for block in assembler.blocks("completed")] == ["text", "reasoning", "text"]


def test_acp_image_content_opens_an_image_block_absent_from_the_interrupted_prefix() -> None:
    chunks = map_all(
        AcpChunkMapper(),
        message("see"),
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "image", "data": "aGk=", "mimeType": "x"}},
        message("this"),
    )

    assert chunks == [
        TextDelta(index=0, text="see"),
        BlockStart(index=1, block_type="image"),
        TextDelta(index=2, text="this"),
    ]
    assembler = BlockAssembler()
    for chunk in chunks:
        assembler.feed(chunk)
    assert assembler.interrupted_blocks() == [{"type": "text", "text": "see"}, {"type": "text", "text": "this"}]


def test_acp_content_without_a_string_type_opens_an_unknown_block() -> None:
    chunks = map_all(AcpChunkMapper(), {"sessionUpdate": "agent_thought_chunk", "content": {"type": 7}})

    assert chunks == [BlockStart(index=0, block_type="unknown")]


def test_acp_updates_that_carry_nothing_map_to_nothing_and_keep_the_current_block() -> None:
    mapper = AcpChunkMapper()
    chunks = map_all(
        mapper,
        message("a"),
        message(""),
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": 5}},
        {"sessionUpdate": "agent_message_chunk"},
        {"sessionUpdate": "plan", "entries": []},
        {"sessionUpdate": "usage_update"},
        {"sessionUpdate": "tool_call", "kind": "read"},
        {"sessionUpdate": "tool_call_update", "toolCallId": 3},
        {"content": {"type": "text", "text": "no kind"}},
        message("b"),
    )

    assert chunks == [TextDelta(index=0, text="a"), TextDelta(index=0, text="b")]


def test_acp_tool_call_kinds_map_to_the_closed_set_and_updates_keep_previous_fields() -> None:
    mapper = AcpChunkMapper()
    chunks = map_all(
        mapper,
        {"sessionUpdate": "tool_call", "toolCallId": "x", "kind": "future_kind", "title": 9},
        {"sessionUpdate": "tool_call_update", "toolCallId": "x", "kind": "edit", "title": "Edit file"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "x", "status": "in_progress"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "unseen"},
    )

    assert chunks == [
        ToolCallChunk(index=0, tool_call_id="x", kind="unknown", status=None, title=None),
        ToolCallChunk(index=0, tool_call_id="x", kind="edit", status=None, title="Edit file"),
        ToolCallChunk(index=0, tool_call_id="x", kind="edit", status="in_progress", title="Edit file"),
        ToolCallChunk(index=1, tool_call_id="unseen", kind="unknown", status=None, title=None),
    ]


def test_acp_text_after_a_tool_call_starts_a_new_block_even_for_the_same_id_later() -> None:
    chunks = map_all(
        AcpChunkMapper(),
        message("a"),
        {"sessionUpdate": "tool_call", "toolCallId": "c", "kind": "read"},
        message("b"),
        {"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "completed"},
        message("c"),
    )

    assert [chunk.index for chunk in chunks] == [0, 1, 2, 1, 3]


def sdk_chunk(turn: int, step: int, index: int, text: str) -> dict[str, Any]:
    chunk = {"type": "text-delta", "index": index, "text": text}
    return {"type": "assistant/chunk", "seq": 1, "time": 0, "data": {"turn": turn, "step": step, "chunk": chunk}}


def sdk_message(turn: int, step: int, content: list[dict[str, Any]]) -> dict[str, Any]:
    msg = {"id": "m", "role": "assistant", "content": content, "source": "model"}
    return {"type": "assistant/message", "seq": 2, "time": 0, "data": {"turn": turn, "step": step, "message": msg}}


def test_sdk_indexes_follow_turn_step_and_child_index() -> None:
    mapper = SdkChunkMapper()
    text = {"type": "text", "text": "hello"}

    assert mapper.map_event(sdk_chunk(0, 0, 0, "hel")) == [TextDelta(index=0, text="hel")]
    assert mapper.map_event(sdk_message(0, 0, [text])) == [BlockEnd(index=0, block=text)]
    assert mapper.map_event(sdk_chunk(0, 1, 0, "next")) == [TextDelta(index=1, text="next")]
    assert mapper.map_event(sdk_chunk(1, 0, 0, "turn two")) == [TextDelta(index=2, text="turn two")]


def test_sdk_message_closes_one_block_per_content_entry() -> None:
    mapper = SdkChunkMapper()
    reasoning, text = {"type": "reasoning", "text": "r"}, {"type": "text", "text": "t"}

    assert mapper.map_event(sdk_message(0, 0, [reasoning, text])) == [
        BlockEnd(index=0, block=reasoning),
        BlockEnd(index=1, block=text),
    ]


def test_sdk_events_that_carry_nothing_map_to_nothing() -> None:
    mapper = SdkChunkMapper()
    reasoning_chunk = {"type": "reasoning-delta", "index": 0, "text": "r"}

    assert mapper.map_event(sdk_chunk(0, 0, 0, "")) == []
    assert mapper.map_event(sdk_message(0, 0, [])) == []
    assert mapper.map_event({"type": "assistant/chunk", "data": {"turn": 0, "step": 0, "chunk": reasoning_chunk}}) == []
    assert mapper.map_event({"type": "turn/end", "data": {"turn": 0, "reason": {"kind": "completed"}}}) == []
    assert mapper.map_event({"type": "assistant/chunk", "data": {"turn": True, "step": 0, "chunk": {}}}) == []
    assert mapper.map_event({"type": "assistant/chunk"}) == []


def test_serialized_chunks_validate_back_into_their_models() -> None:
    chunks: list[StreamChunk] = [
        TextDelta(index=0, text="t"),
        ReasoningDelta(index=1, text="r"),
        ToolCallChunk(index=2, tool_call_id="c", kind="read", status="pending"),
        BlockStart(index=3, block_type="image"),
        BlockEnd(index=4, block={"type": "text", "text": "x"}),
    ]

    assert [stream_chunk_adapter.validate_python(chunk.model_dump()) for chunk in chunks] == chunks
