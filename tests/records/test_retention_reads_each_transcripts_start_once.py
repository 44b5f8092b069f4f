"""Retention sorts the transcripts by their ``run/start`` time, which it reads from each transcript only once.

A transcript's first line never changes, so a later prune of the same directory reads only the transcripts that are
new (or changed: another inode, modification time or size under the same name) and still removes exactly the
oldest ones.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import host.records._store as store_module
from host.records import prune_runs


def _write(runs: Path, name: str, minute: int) -> None:
    start: dict[str, object] = {"type": "run/start", "time": f"2026-01-01T00:{minute:02d}:00.000Z", "data": {}}
    (runs / f"{name}.jsonl").write_text(json.dumps(start) + "\n", encoding="utf-8")


def test_a_second_prune_reads_only_the_new_transcripts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    for minute in range(5):
        _write(runs, f"run-{minute}", minute)
    read: list[str] = []
    real_read = store_module._start_timestamp  # pyright: ignore[reportPrivateUsage]

    def counting(path: str) -> float | None:
        read.append(Path(path).name)
        return real_read(path)

    monkeypatch.setattr(store_module, "_start_timestamp", counting)
    assert prune_runs(tmp_path, 5).removed == []
    assert len(read) == 5
    read.clear()
    _write(runs, "run-9", 9)
    assert prune_runs(tmp_path, 5).removed == ["run-0"]
    assert read == ["run-9.jsonl"]
    read.clear()
    (runs / "run-3.jsonl").unlink()
    _write(runs, "run-3", 0)  # the same name (maybe the same inode), now the oldest
    os.utime(runs / "run-3.jsonl", (1.0, 1.0))  # another modification time, whatever the clock's granularity
    assert prune_runs(tmp_path, 4).removed == ["run-3"]
    assert read == ["run-3.jsonl"]
