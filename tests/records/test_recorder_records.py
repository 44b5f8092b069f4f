"""``RunRecorder`` over a journal's frames (in-process: pure record building).

Consecutive deltas of one block coalesce into one ``chunk`` record, flushed at the block boundary; a permission
decision is recorded as its closed facts only; the observer sees exactly what the file receives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from host.diagnostics import PermissionDecision, SubagentResult
from host.records._paths import ensure_runs_dir
from host.records._recorder import RunRecorder, RunStartFacts
from host.records._writer import TranscriptWriter
from host.stream import RunJournal, TextDelta, ToolCallChunk
from tests.records._helpers import read_jsonl


def _recorder(tmp_path: Path, seen: list[dict[str, Any]]) -> RunRecorder:
    runs = ensure_runs_dir(tmp_path)
    start = RunStartFacts(
        provider="p", kind="acp", cwd="/w", command="agent", args=("--x",), host_version="9", prompt=[]
    )
    return RunRecorder(
        start,
        open_writer=lambda run_id: TranscriptWriter.create(runs, run_id),
        on_record=lambda _run_id, record: seen.append(record),
    )


def test_deltas_of_one_block_coalesce_and_flush_at_the_block_boundary(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    recorder = _recorder(tmp_path, seen)
    journal = RunJournal("run-1", "p", "acp", recorder.on_frame)
    for piece in ("hel", "lo", " world"):
        journal.chunk(TextDelta(index=0, text=piece))
    journal.chunk(ToolCallChunk(index=1, tool_call_id="t", kind="read", status="pending", title="look"))
    journal.chunk(TextDelta(index=2, text="after"))
    journal.finish(SubagentResult(output=[], stop_reason="completed"))
    recorder.close()
    records = read_jsonl(tmp_path / "runs" / "run-1.jsonl")
    assert records == seen
    assert [(r["type"], r["data"].get("type"), r["data"].get("text")) for r in records if r["type"] == "chunk"] == [
        ("chunk", "text-delta", "hello world"),
        ("chunk", "tool-call", None),
        ("chunk", "text-delta", "after"),
    ]
    assert [r["type"] for r in records] == [
        "run/start",
        "prompt",
        "chunk",
        "chunk",
        "chunk",
        "assistant/message",
        "run/end",
    ]
    assert records[0]["data"] == {
        "run_id": "run-1",
        "provider": "p",
        "kind": "acp",
        "cwd": "/w",
        "command": "agent",
        "args": ["--x"],
        "host_version": "9",
    }


def test_a_permission_decision_is_recorded_as_closed_facts_only(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []
    recorder = _recorder(tmp_path, seen)
    journal = RunJournal("run-2", "p", "acp", recorder.on_frame)
    journal.publish()
    journal.permission(PermissionDecision("reject", "execute", "denied"))
    journal.finish(SubagentResult(output=[], stop_reason="error", diagnostic="child denied a tool request"))
    journal.permission(PermissionDecision("allow", "read", "allowed"))  # after the freeze: dropped
    recorder.close()
    permissions = [r["data"] for r in seen if r["type"] == "permission"]
    assert permissions == [{"request_kind": "execute", "policy": "reject", "decision": "denied"}]
    assert seen[-1]["data"]["diagnostic"] == "child denied a tool request"
