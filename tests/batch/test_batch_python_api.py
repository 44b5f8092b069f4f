"""The Python API: the README's batch example runs as written, and ``open_batch`` takes a JSONL path too."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from host import BatchItem, LocalExecutor, load_config, open_batch
from host.batch import BatchJob, ItemOutcome
from tests.batch._helpers import acp_entry, result_lines, tasks_file, write_config
from tests.conftest import MARKER_NAME, REPO_ROOT

pytestmark = pytest.mark.anyio


def _readme_batch_example() -> str:
    section = (REPO_ROOT / "README.md").read_text(encoding="utf-8").split("## Batches", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None
    return match.group(1)


async def test_readme_batch_example_runs_on_the_builtin_echo(tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(_readme_batch_example(), encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT), MARKER_NAME: os.environ[MARKER_NAME]}
    with anyio.fail_after(60):
        done = await anyio.run_process(
            [sys.executable, str(script)], cwd=tmp_path, env=env, check=False, stderr=subprocess.PIPE
        )
    assert done.returncode == 0, done.stderr
    printed = done.stdout.decode().splitlines()
    assert sorted(printed[:-1]) == sorted(f"t{n} completed" for n in range(100))
    assert printed[-1] == "{'completed': 100}"
    assert len(result_lines(tmp_path / "out")) == 100


async def test_open_batch_reads_a_jsonl_path_and_stop_leaves_the_rest_pending(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, {"fast": acp_entry()}))
    tasks = tasks_file(tmp_path / "tasks.jsonl", [{"id": f"t{n}", "task": "x"} for n in range(6)])
    seen: list[str] = []
    with anyio.fail_after(60):
        async with open_batch(
            tasks, outdir=tmp_path / "out", config=config, executor=LocalExecutor(workers=1)
        ) as batch:
            async for result in batch:
                seen.append(result.id)
                if len(seen) == 2:
                    batch.stop()
    summary = batch.summary.to_json()
    assert seen == ["t0", "t1"] or len(seen) == 3  # the item already running when stop() came may still complete
    assert summary["done"] == len(seen) and summary["pending"] == 6 - len(seen)
    assert [line["id"] for line in result_lines(tmp_path / "out")] == seen


class _FailingExecutor:
    """An executor that delivers one outcome, then fails (a lost cluster, a full disk)."""

    workers = 1

    async def execute(self, job: BatchJob) -> None:
        plan = job.plans[0]
        job.on_start(plan.item.id)
        line = {"schema": 1, "id": plan.item.id, "run_id": None, "provider": plan.provider}
        line |= {"stop_reason": "completed", "output": [], "duration_ms": 1, "attempts": 1}
        await job.deliver(ItemOutcome(plan.item.id, line))
        raise OSError(28, "No space left on device")


async def test_an_executor_failure_is_raised_as_itself_after_the_summary_is_written(tmp_path: Path) -> None:
    config = load_config(write_config(tmp_path, {"fast": acp_entry()}))
    items = [BatchItem(id="a", task="x"), BatchItem(id="b", task="y")]
    with anyio.fail_after(10), pytest.raises(OSError, match="No space left"):
        async with open_batch(items, outdir=tmp_path / "out", config=config, executor=_FailingExecutor()) as batch:
            async for _ in batch:
                pass
    assert [line["id"] for line in result_lines(tmp_path / "out")] == ["a"]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert (summary["done"], summary["pending"]) == (1, 1)
