"""The transcript stream of a run whose child sent one update larger than the stream's read size (1 MiB): every
record still arrives, ``run/end`` included (the stream neither stops at the large record nor stalls on it)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from tests.ui._helpers import run_task, ui_server


def test_a_record_over_a_mebibyte_does_not_end_the_stream(tmp_path: Path) -> None:
    state = tmp_path / "state"
    result = run_task(state, tmp_path, "huge task", MOCK_HUGE_CHUNK_MIB="2")
    run_id = result["run_id"]
    with ui_server(state) as url:
        with urllib.request.urlopen(f"{url}api/runs/{run_id}/events", timeout=30) as response:
            body = response.read().decode("utf-8")
    types = [json.loads(line[len("data: ") :]).get("type") for line in body.split("\n") if line.startswith('data: {"')]
    assert types[0] == "run/start"
    assert types[-1] == "run/end", types
    assert body.endswith("event: end\ndata: {}\n\n")
    assert max(len(line) for line in body.split("\n")) > 2 * 1024 * 1024
