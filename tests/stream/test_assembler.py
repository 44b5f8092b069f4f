"""The BlockAssembler read-outs (docs/behaviour.md#stream-chunks, #stream-block-assembler, acceptance 33–37)."""

from __future__ import annotations

from host.stream import BlockAssembler, ReasoningDelta, StreamChunk, TextDelta, ToolCallChunk
from host.stream._chunks import BlockEnd, BlockStart


def assembled(*chunks: StreamChunk) -> BlockAssembler:
    assembler = BlockAssembler()
    for chunk in chunks:
        assembler.feed(chunk)
    return assembler


def tool_call(index: int, call_id: str, status: str | None = "pending") -> ToolCallChunk:
    return ToolCallChunk(index=index, tool_call_id=call_id, kind="execute", status=status, title="Run")


def test_interrupted_prefix_keeps_closed_reasoning_and_open_text_in_first_seen_order() -> None:
    assembler = assembled(
        BlockStart(index=0, block_type="reasoning"),
        ReasoningDelta(index=0, text="planning"),
        BlockEnd(index=0, block={"type": "reasoning", "text": "planning"}),
        TextDelta(index=1, text="half an ans"),
    )

    assert assembler.interrupted_blocks() == [
        {"type": "reasoning", "text": "planning"},
        {"type": "text", "text": "half an ans"},
    ]


def test_interrupted_prefix_drops_open_and_closed_tool_calls() -> None:
    assembler = assembled(
        tool_call(0, "open"),
        tool_call(1, "closed"),
        BlockEnd(index=1, block={"type": "tool-call", "tool_call_id": "closed"}),
        TextDelta(index=2, text="calling"),
    )

    assert assembler.interrupted_blocks() == [{"type": "text", "text": "calling"}]


def test_interrupted_prefix_is_empty_when_nothing_visible_streamed() -> None:
    assembler = assembled(
        TextDelta(index=0, text="  \n"),
        BlockStart(index=1, block_type="mystery"),
        BlockStart(index=2, block_type="reasoning"),
    )

    assert assembler.interrupted_blocks() == []
    assert assembler.blocks("completed") == []


def test_delta_after_block_end_is_ignored_and_kept_text_is_not_trimmed() -> None:
    assembler = assembled(
        TextDelta(index=0, text="  hi "),
        BlockEnd(index=0, block={"type": "text", "text": "  hi "}),
        TextDelta(index=0, text="late"),
    )

    assert assembler.interrupted_blocks() == [{"type": "text", "text": "  hi "}]
    assert assembler.blocks("completed") == [{"type": "text", "text": "  hi "}]


def test_delta_for_an_open_block_of_another_type_is_ignored() -> None:
    assembler = assembled(TextDelta(index=0, text="a"), ReasoningDelta(index=0, text="b"), TextDelta(index=0, text="c"))

    assert assembler.interrupted_blocks() == [{"type": "text", "text": "ac"}]


def test_blocks_for_max_tokens_drop_tool_calls_and_completed_keeps_them() -> None:
    assembler = assembled(
        TextDelta(index=0, text="before"),
        tool_call(1, "call-1"),
        tool_call(1, "call-1", status="completed"),
        tool_call(2, "call-2"),
        BlockEnd(index=2, block={"type": "tool-call", "tool_call_id": "call-2", "kind": "read"}),
    )

    assert assembler.blocks("max-tokens") == [{"type": "text", "text": "before"}]
    assert assembler.blocks("completed") == [
        {"type": "text", "text": "before"},
        {"type": "tool-call", "tool_call_id": "call-1", "kind": "execute", "status": "completed", "title": "Run"},
        {"type": "tool-call", "tool_call_id": "call-2", "kind": "read"},
    ]


def test_block_end_fixes_the_type_and_closed_unknown_blocks_are_kept_by_blocks_only() -> None:
    image = {"type": "image", "data": "aGk=", "mimeType": "image/png"}
    assembler = assembled(BlockStart(index=0, block_type="image"), BlockEnd(index=0, block=image))

    assert assembler.blocks("completed") == [image]
    assert assembler.interrupted_blocks() == []


def test_open_unknown_blocks_are_dropped_by_blocks() -> None:
    assembler = assembled(BlockStart(index=0, block_type="image"), TextDelta(index=1, text="x"))

    assert assembler.blocks("completed") == [{"type": "text", "text": "x"}]


def test_closed_text_with_blank_or_missing_text_is_dropped() -> None:
    assembler = assembled(
        BlockEnd(index=0, block={"type": "text", "text": " "}),
        BlockEnd(index=1, block={"type": "reasoning"}),
        BlockEnd(index=2, block={"type": "text", "text": "kept"}),
    )

    assert assembler.blocks("completed") == [{"type": "text", "text": "kept"}]
    assert assembler.interrupted_blocks() == [{"type": "text", "text": "kept"}]


def test_read_outs_are_copies_callers_may_mutate() -> None:
    block = {"type": "text", "text": "hello"}
    assembler = assembled(BlockEnd(index=0, block=block))

    assembler.blocks("completed")[0]["text"] = "changed"
    block["text"] = "changed too"

    assert assembler.interrupted_blocks() == [{"type": "text", "text": "hello"}]
