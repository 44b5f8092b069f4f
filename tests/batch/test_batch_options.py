"""Batch options: --permission reaches the ACP entries the items use (with the CLI's hints on a denial),
--ray-address needs --executor ray, and one batch directory takes one batch at a time."""

from __future__ import annotations

from pathlib import Path

import pytest

from host.batch import ResultsLockedError
from host.batch._results import ResultsFile
from tests.batch._helpers import acp_entry, result_lines, run_batch, tasks_file, write_config

pytestmark = pytest.mark.anyio


async def test_permission_override_applies_to_the_acp_entries_and_a_denial_gets_a_hint(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"asks": acp_entry(MOCK_PERMISSION="1", MOCK_TOOL_KIND="edit")})
    tasks = tasks_file(tmp_path / "tasks.jsonl", [{"id": "a", "task": "x"}])
    denied = await run_batch(str(tasks), "-o", str(tmp_path / "denied"), "--config", str(config), cwd=tmp_path)
    assert denied.returncode == 1, denied.stderr
    [line] = result_lines(tmp_path / "denied")
    assert line["stop_reason"] == "aborted"
    assert line["hints"] == [
        'the child asked for "edit" and the policy is reject; set permission = "allow" in [providers.asks] or pass '
        "--permission allow"
    ]
    allowed = await run_batch(
        str(tasks), "-o", str(tmp_path / "allowed"), "--config", str(config), "--permission", "allow", cwd=tmp_path
    )
    assert allowed.returncode == 0, allowed.stderr
    assert [line["stop_reason"] for line in result_lines(tmp_path / "allowed")] == ["completed"]


async def test_ray_address_without_the_ray_executor_is_a_usage_error(tmp_path: Path) -> None:
    tasks = tasks_file(tmp_path / "tasks.jsonl", [{"id": "a", "task": "x"}])
    done = await run_batch(str(tasks), "-o", "out", "--ray-address", "127.0.0.1:1", cwd=tmp_path)
    assert done.returncode == 2
    assert "--ray-address needs --executor ray" in done.stderr.decode()
    assert not (tmp_path / "out").exists()


def test_a_batch_directory_takes_one_batch_at_a_time(tmp_path: Path) -> None:
    first = ResultsFile.open(tmp_path)
    try:
        with pytest.raises(ResultsLockedError):
            ResultsFile.open(tmp_path)
    finally:
        first.close()
    ResultsFile.open(tmp_path).close()
