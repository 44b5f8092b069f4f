"""``OutputBudget``: the bound counts UTF-8 bytes, cuts at a character boundary, and never fails on child text;
every kept chunk counts (docs/behaviour.md#stream-output-bound)."""

from __future__ import annotations

import json

from host.run._output_budget import OutputBudget, json_bytes
from host.stream import BlockEnd, BlockStart, ReasoningDelta, TextDelta, ToolCallChunk


def test_text_within_the_bound_is_kept_whole() -> None:
    budget = OutputBudget(6)
    assert budget.admit("abc") == "abc"
    assert budget.admit("def") == "def"
    assert not budget.exceeded


def test_the_crossing_text_is_cut_at_a_character_boundary_and_nothing_follows() -> None:
    budget = OutputBudget(5)
    assert budget.admit("éé\u00e9") == "éé"  # 2 bytes each: the third would need bytes 5 and 6
    assert budget.exceeded
    assert budget.admit("more") == ""


def test_a_lone_surrogate_counts_as_three_bytes_instead_of_failing() -> None:
    budget = OutputBudget(4)
    assert budget.admit("a\ud800") == "a\ud800"
    assert budget.admit("\ud800") == ""
    assert budget.exceeded


def test_reasoning_counts_and_is_cut_like_text() -> None:
    budget = OutputBudget(5)
    assert budget.admit_chunk(ReasoningDelta(index=0, text="abc")) == ReasoningDelta(index=0, text="abc")
    assert budget.admit_chunk(ReasoningDelta(index=0, text="défg")) == ReasoningDelta(index=0, text="d")
    assert budget.exceeded
    assert budget.admit_chunk(TextDelta(index=1, text="x")) is None


def test_a_tool_call_costs_its_compact_json_bytes() -> None:
    chunk = ToolCallChunk(index=0, tool_call_id="t", kind="read", status="pending", title="é")
    size = json_bytes(chunk.model_dump())
    assert size == len(json.dumps(chunk.model_dump(), separators=(",", ":"), ensure_ascii=False).encode())
    assert OutputBudget(size).admit_chunk(chunk) == chunk
    budget = OutputBudget(size - 1)
    assert budget.admit_chunk(chunk) is None
    assert budget.exceeded


def test_a_block_end_closing_streamed_text_counts_only_what_it_adds_and_only_once() -> None:
    budget = OutputBudget(10)
    budget.admit_chunk(TextDelta(index=0, text="abcdef"))
    closing = BlockEnd(index=0, block={"type": "text", "text": "abcdef"})
    assert budget.admit_chunk(closing) == closing  # 6 streamed bytes already paid for its text
    assert not budget.exceeded
    assert budget.admit_chunk(closing) is None  # a second block-end on the index is a new chunk: its JSON counts
    assert budget.exceeded


def test_a_block_end_counts_its_fields_beyond_the_streamed_text() -> None:
    budget = OutputBudget(10)
    budget.admit_chunk(TextDelta(index=0, text="abcdef"))
    annotated = BlockEnd(index=0, block={"type": "text", "text": "abcdef", "annotations": ["x" * 10]})
    assert budget.admit_chunk(annotated) is None
    assert budget.exceeded


def test_a_block_start_and_an_unstreamed_block_end_cost_their_json() -> None:
    start = BlockStart(index=0, block_type="image")
    end = BlockEnd(index=1, block={"type": "reasoning", "text": "r"})
    budget = OutputBudget(json_bytes(start.model_dump()) + json_bytes(end.model_dump()))
    assert list(budget.admitted([start, end])) == [start, end]
    assert not budget.exceeded
    assert list(budget.admitted([TextDelta(index=2, text="x")])) == []
    assert budget.exceeded
