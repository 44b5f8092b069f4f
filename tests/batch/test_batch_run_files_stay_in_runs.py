"""The run files a Ray worker hands back: only ``<run id>.<jsonl|stderr|patch|changes.json>`` names are written (never
a path out of ``runs/``), small files travel whole and leave the node at once, a large one stays on the node and is
written by the driver chunk by chunk, whole, 0600."""

from __future__ import annotations

from pathlib import Path

import pytest

from host.batch._run_files import (
    CHUNK_BYTES,
    INLINE_FILE_BYTES,
    RunFile,
    collect_run_files,
    read_chunk,
    store_run_files,
)

RUN_ID = "0b8f1c2e-4d5a-4e6f-8a9b-0c1d2e3f4a5b"


def _no_fetch(name: str, offset: int) -> bytes:
    raise AssertionError(f"nothing is streamed here ({name} at {offset})")


@pytest.mark.parametrize("name", ["../escape.jsonl", "sub/x.patch", f"{RUN_ID}.txt", ".jsonl", f"{RUN_ID}.patch/"])
def test_a_name_that_is_not_a_run_files_is_refused_and_nothing_is_written(tmp_path: Path, name: str) -> None:
    runs = tmp_path / "out" / "runs"
    with pytest.raises(ValueError, match="not a run file"):
        store_run_files(runs, [RunFile(name, 3, b"bad")], _no_fetch)
    assert not (tmp_path / "out" / "escape.jsonl").exists()
    assert not [path for path in tmp_path.rglob("*") if path.is_file()]
    with pytest.raises(ValueError, match="not a run file"):
        read_chunk(runs, name, 0)


def test_small_files_travel_whole_and_a_large_one_is_streamed_whole(tmp_path: Path) -> None:
    node, out = tmp_path / "node", tmp_path / "out" / "runs"
    node.mkdir()
    (node / f"{RUN_ID}.jsonl").write_bytes(b'{"type":"run/start"}\n')
    (node / f"{RUN_ID}.stderr").write_bytes(b"x" * INLINE_FILE_BYTES)  # exactly the bound: still inline
    large = bytes(range(256)) * ((2 * CHUNK_BYTES + 12345) // 256)
    (node / f"{RUN_ID}.patch").write_bytes(large)
    (node / "other-run.patch").write_bytes(b"not this item's")
    files = collect_run_files(node, [RUN_ID])
    assert {(f.name, f.size, f.data is None) for f in files} == {
        (f"{RUN_ID}.jsonl", 21, False),
        (f"{RUN_ID}.stderr", INLINE_FILE_BYTES, False),
        (f"{RUN_ID}.patch", len(large), True),
    }
    assert sorted(path.name for path in node.iterdir()) == [f"{RUN_ID}.patch", "other-run.patch"]
    chunks: list[int] = []

    def fetch(name: str, offset: int) -> bytes:
        chunk = read_chunk(node, name, offset)
        chunks.append(len(chunk))
        return chunk

    store_run_files(out, files, fetch)
    assert (out / f"{RUN_ID}.patch").read_bytes() == large
    assert chunks == [CHUNK_BYTES, CHUNK_BYTES, len(large) - 2 * CHUNK_BYTES, 0]
    assert (out / f"{RUN_ID}.stderr").read_bytes() == b"x" * INLINE_FILE_BYTES
    assert {path.name: path.stat().st_mode & 0o777 for path in out.iterdir()} == dict.fromkeys(
        [f"{RUN_ID}.jsonl", f"{RUN_ID}.stderr", f"{RUN_ID}.patch"], 0o600
    )
    assert out.stat().st_mode & 0o777 == 0o700
