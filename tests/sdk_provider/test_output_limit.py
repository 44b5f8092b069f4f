"""``max_output_bytes``: past the bound a DSH SDK run ends ``error`` / ``output-limit`` at stage ``session-run``,
keeping the text up to the bound cut at a character boundary; no chunk past it reaches the stream."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from host.stream import BlockEnd, ChunkFrame, StreamFrame, TextDelta
from tests.sdk_provider._helpers import (
    PROCESS_TIMEOUT_S,
    assert_result_snapshot,
    make_request,
    open_run,
    run_to_result,
    runtime_spec,
)

pytestmark = pytest.mark.anyio

PATCHED = str(Path(__file__).resolve().parent / "children" / "patched_runtime.py")


async def test_output_past_the_bound_ends_the_run_with_the_output_limit_diagnostic(tmp_path: Path) -> None:
    # 20 two-byte characters against a 15-byte bound: 7 characters (14 bytes) are kept.
    spec = replace(runtime_spec(tmp_path, FAKE_TEXT="é" * 20), max_output_bytes=15)
    frames: list[StreamFrame] = []
    result = await run_to_result(spec, make_request(on_frame=frames.append))
    assert result.stop_reason == "error"
    assert result.diagnostic == "Subagent failure (provider: DSH SDK; stage: session-run; category: output-limit)"
    assert result.output == [{"type": "text", "text": "é" * 7}]
    streamed = [frame.chunk for frame in frames if isinstance(frame, ChunkFrame)]
    assert [chunk.text for chunk in streamed if isinstance(chunk, TextDelta)] == ["é" * 7]
    assert_result_snapshot("output-limit", result)


async def test_output_within_the_bound_completes(tmp_path: Path) -> None:
    spec = replace(runtime_spec(tmp_path, FAKE_TEXT="é" * 20), max_output_bytes=40)
    result = await run_to_result(spec)
    assert result.stop_reason == "completed"
    assert result.output == [{"type": "text", "text": "é" * 20}]


async def test_a_reasoning_block_counts_against_the_bound_and_a_streamed_block_only_once(tmp_path: Path) -> None:
    # "answer" streams (6 bytes); its closing text block adds nothing; the reasoning block's JSON passes the bound.
    spec = replace(runtime_spec(tmp_path, FAKE_TEXT="answer", FAKE_REASONING="why"), max_output_bytes=16)
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), spec) as run:
            result = await run.result()
    assert result.stop_reason == "error"
    assert result.output == [{"type": "text", "text": "answer"}]
    stream = run.transcript[1].data["stream"]
    assert stream == [TextDelta(index=0, text="answer"), BlockEnd(index=0, block={"type": "text", "text": "answer"})]
    assert_result_snapshot("output-limit-reasoning-block", result)


async def test_events_the_run_does_not_keep_cost_nothing(tmp_path: Path) -> None:
    spec = replace(runtime_spec(tmp_path, FAKE_TEXT="answer", FAKE_UNKNOWN_EVENT="1"), max_output_bytes=6)
    result = await run_to_result(spec)
    assert result.stop_reason == "completed"
    assert result.output == [{"type": "text", "text": "answer"}]


async def test_text_deltas_the_stream_cannot_map_count_against_the_same_bound(tmp_path: Path) -> None:
    # Deltas without an index fold into the output but map to no stream chunk: past the bound the run still ends
    # output-limit, with the output cut exactly as for indexed deltas.
    spec = replace(
        runtime_spec(tmp_path, args=[PATCHED], PATCH_UNINDEXED_DELTAS="1", FAKE_TEXT="é" * 20, FAKE_EMPTY_MESSAGE="1"),
        max_output_bytes=15,
    )
    result = await run_to_result(spec)
    assert result.stop_reason == "error"
    assert result.diagnostic == "Subagent failure (provider: DSH SDK; stage: session-run; category: output-limit)"
    assert result.output == [{"type": "text", "text": "é" * 7}]
