"""On a Ray node, the run files an item left are collected only when each is a regular file
(docs/behaviour.md#records-files-and-modes): a FIFO named like a run's stderr is passed at once (it used to block
``open()``) and a symlink to ``/dev/zero`` named like its patch is neither collected nor streamed (it used to be
announced as a file to stream, whose chunks never end)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from host.batch._run_files import collect_run_files, read_chunk
from tests._state_file_helpers import fifo_at, symlink_to_dev_zero

RUN_ID = "0f8e2a4c-5b7d-4e6f-9a1b-3c2d4e5f6a7b"
PROMPT_S = 5.0
"""How long collecting may take (a FIFO's blocked reader is released only after ``RELEASE_S``)."""
RELEASE_S = 10.0


def test_a_fifo_and_a_dev_zero_symlink_are_not_collected(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir(mode=0o700)
    (runs / f"{RUN_ID}.jsonl").write_bytes(b'{"seq":0}\n')
    symlink_to_dev_zero(runs / f"{RUN_ID}.patch")
    with fifo_at(runs / f"{RUN_ID}.stderr", release_after_s=RELEASE_S):
        started = time.monotonic()
        files = collect_run_files(runs, [RUN_ID])
        elapsed = time.monotonic() - started
        assert (runs / f"{RUN_ID}.stderr").is_fifo()
    assert elapsed < PROMPT_S
    assert [(file.name, file.data) for file in files] == [(f"{RUN_ID}.jsonl", b'{"seq":0}\n')]
    assert (runs / f"{RUN_ID}.patch").is_symlink()
    with pytest.raises(OSError, match="a symlink"):
        read_chunk(runs, f"{RUN_ID}.patch", 0)
