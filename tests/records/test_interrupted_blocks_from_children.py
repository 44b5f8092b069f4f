"""``BlockAssembler.interrupted_blocks()`` over the streams real fake children deliver.

Closed (DSH SDK ``block-end``) and open (ACP deltas) text and reasoning are kept in first-seen order; tool calls, a
whitespace-only block and an unknown open block (an ACP image chunk) are dropped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from host.stream import BlockAssembler, ChunkFrame
from tests.records._helpers import RecordedRun, acp_entry, record_run, sdk_entry

pytestmark = pytest.mark.anyio


def _interrupted(run: RecordedRun) -> list[dict[str, object]]:
    assembler = BlockAssembler()
    for frame in run.frames:
        if isinstance(frame, ChunkFrame):
            assembler.feed(frame.chunk)
    return assembler.interrupted_blocks()


async def test_closed_text_and_reasoning_are_kept(tmp_path: Path) -> None:
    run = await record_run(tmp_path, sdk_entry(FAKE_TEXT="closed text", FAKE_REASONING="closed thought"))
    assert [chunk["type"] for chunk in run.of_type("chunk")] == ["text-delta", "block-end", "block-end"]
    assert _interrupted(run) == [
        {"type": "text", "text": "closed text"},
        {"type": "reasoning", "text": "closed thought"},
    ]


async def test_open_reasoning_and_text_are_kept_and_tool_calls_dropped(tmp_path: Path) -> None:
    run = await record_run(tmp_path, acp_entry(MOCK_THOUGHT="1", MOCK_TOOL_CALL="1", MOCK_TEXT="open text"))
    assert [chunk["type"] for chunk in run.of_type("chunk")] == [
        "reasoning-delta",
        "tool-call",
        "tool-call",
        "text-delta",
    ]
    assert _interrupted(run) == [{"type": "reasoning", "text": "thinking…"}, {"type": "text", "text": "open text"}]


async def test_a_whitespace_only_block_is_dropped(tmp_path: Path) -> None:
    run = await record_run(tmp_path, acp_entry(MOCK_TEXT="  \n\t"))
    assert run.of_type("chunk") == [{"type": "text-delta", "index": 0, "text": "  \n\t"}]
    assert _interrupted(run) == []


async def test_an_unknown_open_block_is_dropped(tmp_path: Path) -> None:
    run = await record_run(tmp_path, acp_entry(MOCK_IMAGE_CHUNK="1", MOCK_TEXT="after the image"))
    assert run.of_type("chunk")[0] == {"type": "block-start", "index": 0, "block_type": "image"}
    assert _interrupted(run) == [{"type": "text", "text": "after the image"}]
