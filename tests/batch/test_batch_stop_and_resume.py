"""Resume and stop: a SIGKILLed batch leaves only whole lines and resumes without duplicates; SIGINT and SIGTERM
start nothing more, tear the running items down, write no line for them, write the summary and exit 130 / 143."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import anyio
import psutil
import pytest

from host.batch._results import ResultsFile
from tests.batch._helpers import (
    CLI_TIMEOUT_S,
    acp_entry,
    killed_on_exit,
    private,
    result_lines,
    run_batch,
    slow_fast_config,
    start_batch,
    tasks_file,
    write_config,
)
from tests.cli._helpers import wait_for_ready_marker

pytestmark = pytest.mark.anyio


def _items(tmp_path: Path) -> Path:
    items = [{"id": f"fast-{n}", "task": f"task {n}", "provider": "fast"} for n in range(3)]
    items.append({"id": "slow-0", "task": "hang", "provider": "slow"})
    items += [{"id": f"later-{n}", "task": f"later {n}", "provider": "fast"} for n in range(3)]
    return tasks_file(tmp_path / "tasks.jsonl", items)


def _descendants(pid: int) -> list[psutil.Process]:
    return psutil.Process(pid).children(recursive=True)


async def test_sigkill_mid_batch_then_resume_runs_each_item_once(tmp_path: Path) -> None:
    config, ready = slow_fast_config(tmp_path)
    tasks, out = _items(tmp_path), tmp_path / "out"
    # One worker: the fast items before the slow one finish, the slow one hangs, the later ones never start.
    process = await start_batch(str(tasks), "-o", str(out), "--config", str(config), "--workers", "1", cwd=tmp_path)
    async with killed_on_exit(process):
        with anyio.fail_after(CLI_TIMEOUT_S):
            await wait_for_ready_marker(ready)
        process.send_signal(signal.SIGKILL)
        with anyio.fail_after(CLI_TIMEOUT_S):
            await process.wait()
    first = result_lines(out)
    assert [line["id"] for line in first] == ["fast-0", "fast-1", "fast-2"]
    assert private(out / "results.jsonl") and private(out)
    # The hanging child died with the batch (the keeper); the conftest leak check proves it too.
    config = write_config(tmp_path, {"fast": acp_entry(), "slow": acp_entry()})
    done = await run_batch(str(tasks), "-o", str(out), "--config", str(config), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    ids = [line["id"] for line in result_lines(out)]
    assert sorted(ids) == sorted(["fast-0", "fast-1", "fast-2", "slow-0", "later-0", "later-1", "later-2"])
    assert len(ids) == len(set(ids))
    summary = json.loads(done.stdout)
    assert (summary["ran"], summary["skipped"], summary["pending"]) == (4, 3, 0)
    assert summary["counts"] == {"completed": 7}


async def test_redo_existing_runs_done_ids_again(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fast": acp_entry()})
    tasks = tasks_file(tmp_path / "tasks.jsonl", [{"id": "a", "task": "x"}, {"id": "b", "task": "y"}])
    out = tmp_path / "out"
    for _ in range(2):
        done = await run_batch(str(tasks), "-o", str(out), "--config", str(config), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    assert len(result_lines(out)) == 2
    done = await run_batch(str(tasks), "-o", str(out), "--config", str(config), "--redo-existing", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [line["id"] for line in result_lines(out)][2:] in (["a", "b"], ["b", "a"])


def test_opening_results_cuts_a_torn_last_line(tmp_path: Path) -> None:
    whole = json.dumps({"schema": 1, "id": "a", "stop_reason": "completed", "duration_ms": 3, "attempts": 1})
    (tmp_path / "results.jsonl").write_text(whole + '\n{"schema": 1, "id": "b", "stop_re', encoding="utf-8")
    results = ResultsFile.open(tmp_path)
    try:
        assert list(results.done()) == ["a"]
        results.append({"schema": 1, "id": "b", "stop_reason": "completed", "duration_ms": 1, "attempts": 1})
    finally:
        results.close()
    assert [line["id"] for line in result_lines(tmp_path)] == ["a", "b"]


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
async def test_signal_stops_the_batch_tears_running_items_down_and_writes_the_summary(
    tmp_path: Path, signum: signal.Signals, status: int
) -> None:
    config, ready = slow_fast_config(tmp_path)
    tasks, out = _items(tmp_path), tmp_path / "out"
    process = await start_batch(str(tasks), "-o", str(out), "--config", str(config), "--workers", "1", cwd=tmp_path)
    async with killed_on_exit(process):
        with anyio.fail_after(CLI_TIMEOUT_S):
            await wait_for_ready_marker(ready)
        children = _descendants(process.pid)
        assert children
        process.send_signal(signum)
        with anyio.fail_after(CLI_TIMEOUT_S):
            assert await process.wait() == status
    assert not [child for child in children if child.is_running() and child.status() != psutil.STATUS_ZOMBIE]
    assert [line["id"] for line in result_lines(out)] == ["fast-0", "fast-1", "fast-2"]  # no line for slow-0
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert private(out / "summary.json")
    assert summary["stopped_by"] == signum.name
    assert (summary["done"], summary["pending"], summary["counts"]) == (3, 4, {"completed": 3})
    assert os.listdir(out / "runs")  # the finished items' records


async def test_exit_1_when_an_item_did_not_complete(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fast": acp_entry(), "refuses": acp_entry(MOCK_STOP="refusal")})
    tasks = tasks_file(
        tmp_path / "tasks.jsonl",
        [{"id": "a", "task": "x", "provider": "fast"}, {"id": "b", "task": "y", "provider": "refuses"}],
    )
    out = tmp_path / "out"
    done = await run_batch(str(tasks), "-o", str(out), "--config", str(config), "--json", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    assert summary["counts"] == {"completed": 1, "refusal": 1}
    assert summary["failed"] == [{"id": "b", "stop_reason": "refusal"}]
    assert set(summary["duration_ms"]) == {"p50", "p95", "max"}
    assert summary == json.loads((out / "summary.json").read_text(encoding="utf-8"))


async def test_the_batch_directory_keeps_every_run_whatever_keep_runs_says(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"fast": acp_entry()})
    config.write_text("[host]\nkeep_runs = 1\n" + config.read_text(encoding="utf-8"), encoding="utf-8")
    tasks = tasks_file(tmp_path / "tasks.jsonl", [{"id": f"t{n}", "task": "x"} for n in range(3)])
    out = tmp_path / "out"
    done = await run_batch(str(tasks), "-o", str(out), "--config", str(config), "--workers", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    runs = sorted(name.removesuffix(".jsonl") for name in os.listdir(out / "runs") if name.endswith(".jsonl"))
    assert runs == sorted(line["run_id"] for line in result_lines(out))
