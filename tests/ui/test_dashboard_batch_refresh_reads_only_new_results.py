"""A refresh of a batch page does not re-read ``results.jsonl``: an unchanged file (same inode, size and mtime) is
served from the parsed cache, a file that grew is read from its last whole line on (the new lines show, the lines
already read are not parsed again), and a replaced file is read again from its start. The cache holds the few
batches viewed last: a batch pushed out of it is read again."""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

from tests.ui._helpers import ui_server, write_batch


def _page(url: str, name: str = "b1") -> str:
    with urllib.request.urlopen(url + f"batch?name={name}", timeout=10) as response:
        assert response.status == 200
        return response.read().decode("utf-8")


def _failed(item_id: str, diagnostic: str) -> dict[str, object]:
    return {"id": item_id, "run_id": None, "stop_reason": "error", "duration_ms": 5, "diagnostic": diagnostic}


def _edit_in_place(path: Path, old: bytes, new: bytes) -> None:
    """Overwrite ``old`` with ``new`` (same length), keeping the file's inode, size and mtime."""
    before = path.stat()
    with open(path, "r+b") as file:
        data = file.read()
        file.seek(data.index(old))
        file.write(new)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size


def test_a_grown_results_file_shows_its_new_lines_and_a_replaced_one_is_read_again(tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_batch(state / "b1", [_failed("first", "DIAG-OLD")])
    results = state / "b1" / "results.jsonl"
    with ui_server(state) as url:
        assert "DIAG-OLD" in _page(url)
        # Same inode, size and mtime: the cached parse is served (the in-place edit is not read).
        _edit_in_place(results, b"DIAG-OLD", b"DIAG-NEW")
        page = _page(url)
        assert "DIAG-OLD" in page and "DIAG-NEW" not in page
        # Grown: only the appended line is read; it shows next to the first line as it was parsed.
        with open(results, "ab") as file:
            file.write((json.dumps({"schema": 1, **_failed("second", "DIAG-APPENDED")}) + "\n").encode())
        page = _page(url)
        assert "DIAG-APPENDED" in page and "second" in page
        assert "DIAG-OLD" in page and "DIAG-NEW" not in page
        # Replaced (a new inode): read again from the start.
        replacement = tmp_path / "replacement.jsonl"
        replacement.write_text(json.dumps({"schema": 1, **_failed("third", "DIAG-REPLACED")}) + "\n")
        os.replace(replacement, results)
        page = _page(url)
        assert "DIAG-REPLACED" in page
        assert "DIAG-OLD" not in page and "DIAG-APPENDED" not in page and "DIAG-NEW" not in page


def test_a_batch_pushed_out_of_the_cache_by_others_viewed_since_is_read_again(tmp_path: Path) -> None:
    state = tmp_path / "state"
    names = [f"b{n}" for n in range(9)]
    for name in names:
        write_batch(state / name, [_failed("only", f"DIAG-{name}-OLD")])
    with ui_server(state) as url:
        assert "DIAG-b0-OLD" in _page(url, "b0")
        _edit_in_place(state / "b0" / "results.jsonl", b"DIAG-b0-OLD", b"DIAG-b0-NEW")
        assert "DIAG-b0-OLD" in _page(url, "b0")  # still cached
        for name in names[1:]:
            assert f"DIAG-{name}-OLD" in _page(url, name)
        assert "DIAG-b0-NEW" in _page(url, "b0")  # eight other batches pushed it out: read again
