"""Bad batch input fails with exit 2 before anything runs, naming the line and the problem; blank lines are skipped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from host import BatchInputError, BatchItem
from host.batch import parse_items
from tests.batch._helpers import acp_entry, result_lines, run_batch, tasks_file, write_config

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"id": "a", "task": "x"}', "{not json"], "line 2: not valid JSON"),
        (['{"id": "a", "task": "x"}', "", '{"id": "a", "task": "y"}'], 'line 3: duplicate id "a" (first on line 1)'),
        (['{"id": "a", "task": "x", "provider": "nope"}'], 'line 1: unknown provider "nope" (configured: fast)'),
        (['{"id": "a"}'], 'line 1: missing field "task"'),
        (['{"id": "a", "task": "x", "extra": 1}'], 'line 1: unknown field "extra"'),
        (['{"id": "a", "task": "x", "timeout_ms": -5}'], 'line 1: field "timeout_ms"'),
        (['{"id": 7, "task": "x"}'], 'line 1: field "id"'),
        (["[1, 2]"], "line 1: expected a JSON object, got an array"),
        (['{"id": "a", "task": "x", "workspace": "elsewhere"}'], 'line 1: field "workspace"'),
    ],
)
async def test_bad_line_exits_2_naming_the_line_and_runs_nothing(
    tmp_path: Path, lines: list[str], message: str
) -> None:
    config = write_config(tmp_path, {"fast": acp_entry()})
    tasks = tasks_file(tmp_path / "tasks.jsonl", ['{"id": "ok", "task": "fine"}', *lines])
    # The leading good line shifts every line number by one.
    shifted = message.replace("line 3", "line 4").replace("line 2", "line 3").replace("line 1:", "line 2:")
    shifted = shifted.replace("first on line 1", "first on line 2")
    done = await run_batch(str(tasks), "-o", str(tmp_path / "out"), "--config", str(config), "--json", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"subagent-host: {shifted}" in done.stderr.decode()
    error = json.loads(done.stdout)
    assert error["schema"] == 1 and error["error"].startswith(f"subagent-host: {shifted}")
    assert not (tmp_path / "out").exists()  # nothing ran, nothing was written


async def test_blank_lines_are_skipped_and_slice_selects_valid_items(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fast": acp_entry()})
    items = [{"id": f"t{n}", "task": f"task {n}"} for n in range(4)]
    tasks = tasks_file(tmp_path / "tasks.jsonl", [items[0], "", "   ", items[1], items[2], "", items[3]])
    out = tmp_path / "out"
    done = await run_batch(str(tasks), "-o", str(out), "--config", str(config), "--slice", "1:3", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert sorted(line["id"] for line in result_lines(out)) == ["t1", "t2"]


async def test_a_bad_slice_or_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fast": acp_entry()})
    tasks = tasks_file(tmp_path / "tasks.jsonl", [{"id": "a", "task": "x"}])
    bad_slice = await run_batch(str(tasks), "-o", "out", "--config", str(config), "--slice", "x", cwd=tmp_path)
    assert bad_slice.returncode == 2
    assert "--slice must be START:STOP" in bad_slice.stderr.decode()
    missing = await run_batch("nope.jsonl", "-o", "out", "--config", str(config), cwd=tmp_path)
    assert missing.returncode == 2
    assert "cannot read nope.jsonl" in missing.stderr.decode()


def test_parse_items_resolves_the_default_provider_and_rejects_missing_ones() -> None:
    lines = ['{"id": "a", "task": "x"}', '{"id": "b", "task": "y", "provider": "two"}']
    items = parse_items(lines, providers=["one", "two"], default_provider="one")
    assert [(item.id, item.provider) for item in items] == [("a", "one"), ("b", "two")]
    with pytest.raises(BatchInputError) as caught:
        parse_items(lines, providers=["one", "two"], default_provider=None)
    assert caught.value.line == 1 and "no provider" in str(caught.value)
    with pytest.raises(BatchInputError, match="not valid UTF-8"):
        parse_items([b"\xff\n"], providers=["one"], default_provider="one")
    assert isinstance(items[0], BatchItem)
