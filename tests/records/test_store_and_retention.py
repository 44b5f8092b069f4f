"""The runs directory as the store reads it: status (ended, starting, running, incomplete), prefix lookup, pruning.

"In progress" is the writer's ``flock``: pruning skips a locked transcript and ``runs list`` calls it ``starting``
until its ``handshake`` record, then ``running``; the same file without its writer is ``incomplete``. In-process:
these are file-system facts of one process.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from host._exceptions import ConfigError
from host.config._loader import parse_config
from host.records import AmbiguousRunError, RunNotFoundError, find_run, list_runs, prune_runs, resolve_state_dir
from host.records._paths import ensure_runs_dir
from host.records._writer import TranscriptWriter, encode_line


def _write_run(
    runs: Path, run_id: str, minute: int, *, ended: bool, task: str = "task", handshake: bool = True
) -> TranscriptWriter:
    writer = TranscriptWriter.create(runs, run_id)
    time = f"2026-12-01T10:{minute:02d}:00.000Z"
    writer.write(encode_line({"seq": 0, "type": "run/start", "time": time, "data": {"provider": "p"}}))
    writer.write(
        encode_line({"seq": 1, "type": "prompt", "time": time, "data": {"content": [{"type": "text", "text": task}]}})
    )
    if handshake:
        writer.write(encode_line({"seq": 2, "type": "handshake", "time": time, "data": {"timings_ms": {}}}))
    if ended:
        end = {"stop_reason": "completed", "cause": "completed", "duration_ms": 5}
        writer.write(encode_line({"seq": 3, "type": "run/end", "time": time, "data": end}))
    return writer


def test_status_is_the_stop_reason_or_running_while_locked_or_incomplete_once_unlocked(tmp_path: Path) -> None:
    runs = ensure_runs_dir(tmp_path)
    _write_run(runs, "aaa-ended", 1, ended=True).close()
    live = _write_run(runs, "bbb-live", 2, ended=False, task="x" * 80)
    starting = _write_run(runs, "ccc-starting", 3, ended=False, handshake=False)
    try:
        summaries = list_runs(tmp_path)
        assert [(s.run_id, s.status) for s in summaries] == [
            ("ccc-starting", "starting"),  # in progress, its handshake not yet passed
            ("bbb-live", "running"),
            ("aaa-ended", "completed"),
        ]
        assert summaries[1].task == "x" * 60 and summaries[2].duration_ms == 5
        assert [s.cause for s in summaries] == [None, None, "completed"]
        # A run in progress has a live duration: from its run/start until now (days, for these old records).
        live_ms = summaries[1].duration_ms
        assert live_ms is not None and live_ms > 60_000
    finally:
        live.close()
        starting.close()
    assert [s.status for s in list_runs(tmp_path)][:2] == ["incomplete", "incomplete"]


def test_prune_keeps_the_newest_and_never_touches_a_run_in_progress(tmp_path: Path) -> None:
    runs = ensure_runs_dir(tmp_path)
    for minute in range(4):
        _write_run(runs, f"run-{minute}", minute, ended=True).close()
    (runs / "run-0.stderr").write_bytes(b"tail")
    oldest_live = _write_run(runs, "run-live", 0, ended=False)
    try:
        outcome = prune_runs(tmp_path, 2)
    finally:
        oldest_live.close()
    assert sorted(outcome.removed) == ["run-0", "run-1"] and outcome.in_progress == ["run-live"]
    assert sorted(path.name for path in runs.iterdir()) == ["run-2.jsonl", "run-3.jsonl", "run-live.jsonl"]


def test_a_unique_prefix_finds_a_run_and_an_ambiguous_one_lists_the_candidates(tmp_path: Path) -> None:
    runs = ensure_runs_dir(tmp_path)
    _write_run(runs, "abc123", 1, ended=True).close()
    _write_run(runs, "abd456", 2, ended=True).close()
    assert find_run(tmp_path, "abc").run_id == "abc123"
    with pytest.raises(AmbiguousRunError) as caught:
        find_run(tmp_path, "ab")
    assert caught.value.candidates == ["abc123", "abd456"]
    with pytest.raises(RunNotFoundError):
        find_run(tmp_path, "zzz")


def test_state_dir_resolution_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUBAGENT_HOST_STATE_DIR", str(tmp_path / "from-env"))
    assert resolve_state_dir(tmp_path / "explicit") == tmp_path / "explicit"
    assert resolve_state_dir(None) == tmp_path / "from-env"
    monkeypatch.delenv("SUBAGENT_HOST_STATE_DIR")
    default = resolve_state_dir(None)
    assert default.name == "subagent-host" and default.is_absolute()


def test_runs_dir_is_created_0700_under_any_umask(tmp_path: Path) -> None:
    previous = os.umask(0)
    try:
        runs = ensure_runs_dir(tmp_path / "state")
        writer = TranscriptWriter.create(runs, "r")
        writer.close()
    finally:
        os.umask(previous)
    assert (runs.stat().st_mode & 0o777, runs.parent.stat().st_mode & 0o777) == (0o700, 0o700)
    assert (runs / "r.jsonl").stat().st_mode & 0o777 == 0o600


def test_host_keep_runs_is_validated_strictly() -> None:
    providers = {"p": {"kind": "acp", "command": "agent"}}
    assert parse_config({"providers": providers}).keep_runs == 1000
    assert parse_config({"providers": providers, "host": {"keep_runs": 3}}).keep_runs == 3
    with pytest.raises(ConfigError) as caught:
        parse_config({"providers": providers, "host": {"keep_run": 3}})
    assert str(caught.value) == 'subagent-host: unknown config key "host.keep_run"'
    for bad in (True, -1, "10", 1.5):
        with pytest.raises(ConfigError) as caught:
            parse_config({"providers": providers, "host": {"keep_runs": bad}})
        assert str(caught.value) == "subagent-host: host.keep_runs must be an integer >= 0"
