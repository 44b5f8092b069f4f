"""``max_output_bytes``: past the bound an ACP run ends ``error`` / ``output-limit`` at stage ``prompt``, keeping
the text up to the bound cut at a character boundary; no chunk past it reaches the stream or the transcript."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from host.stream import ChunkFrame, ReasoningDelta, StreamFrame, TextDelta
from tests.acp_provider._helpers import PROCESS_TIMEOUT_S, agent_spec, make_request, open_run
from tests.snapshots import assert_snapshot

pytestmark = pytest.mark.anyio


async def test_output_past_the_bound_ends_the_run_with_the_output_limit_diagnostic(tmp_path: Path) -> None:
    # 20 two-byte characters against a 15-byte bound: 7 characters (14 bytes) are kept.
    spec = replace(agent_spec(tmp_path, MOCK_TEXT="é" * 20, MOCK_LATE_TEXT="late"), max_output_bytes=15)
    frames: list[StreamFrame] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(on_frame=frames.append), spec) as run:
            result = await run.result()
    assert result.stop_reason == "error"
    assert result.output == [{"type": "text", "text": "é" * 7}]
    streamed = [frame.chunk for frame in frames if isinstance(frame, ChunkFrame)]
    assert [chunk.text for chunk in streamed if isinstance(chunk, TextDelta)] == ["é" * 7]
    assert [event.type for event in run.transcript] == ["run/start", "assistant/attempt", "run/end"]
    assert run.transcript[1].data["stream"] == [TextDelta(index=0, text="é" * 7)]
    assert_snapshot("acp", "output-limit", result.to_json())


async def test_output_within_the_bound_completes(tmp_path: Path) -> None:
    spec = replace(agent_spec(tmp_path, MOCK_TEXT="é" * 20), max_output_bytes=40)
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), spec) as run:
            result = await run.result()
    assert result.stop_reason == "completed"
    assert result.output == [{"type": "text", "text": "é" * 20}]


async def test_reasoning_and_tool_calls_count_against_the_bound(tmp_path: Path) -> None:
    # The thought fits; the tool call's JSON does not: the run ends there, before the answer text.
    thought = "thinking…"
    spec = agent_spec(tmp_path, MOCK_THOUGHT="1", MOCK_TOOL_CALL="1", MOCK_TEXT="answer")
    spec = replace(spec, max_output_bytes=len(thought.encode()) + 10)
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), spec) as run:
            result = await run.result()
    assert result.stop_reason == "error"
    assert result.output == []
    assert run.transcript[1].data["stream"] == [ReasoningDelta(index=0, text=thought)]
    assert_snapshot("acp", "output-limit-tool-call", result.to_json())


async def test_updates_the_run_does_not_keep_cost_nothing(tmp_path: Path) -> None:
    # Plan, usage, an unknown kind and an extension notification come first; the 6-byte answer still fits.
    spec = replace(agent_spec(tmp_path, MOCK_EXTRA_UPDATES="1", MOCK_TEXT="answer"), max_output_bytes=6)
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), spec) as run:
            result = await run.result()
    assert result.stop_reason == "completed"
    assert result.output == [{"type": "text", "text": "answer"}]
