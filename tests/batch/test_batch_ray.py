"""The Ray executor on one local cluster for the whole session (``ray.init(num_cpus=2, include_dashboard=False)``):
results of the local shape with the records in ``OUTDIR/runs/``, a Ctrl-C that leaves no process on the node, and
a worker whose child's ``setsid()`` grandchild does not survive the item.

The cluster is ``ray_cluster`` (this directory's ``conftest.py``); the fake agent's entries carry the suite's process
marker in their ``env``, so the leak check still sees every child and grandchild on the node.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

from host import BatchItem, LocalExecutor, RayExecutor, load_config, open_batch
from host.records import list_runs
from tests._provider_helpers import wait_for_file, wait_until_gone
from tests.batch._helpers import CLI_TIMEOUT_S, acp_entry, killed_on_exit, result_lines, start_batch, tasks_file
from tests.batch._helpers import write_config as write_config
from tests.conftest import MARKER_NAME

pytestmark = pytest.mark.anyio

# Ray's actor start (a worker process per slot) on a loaded 2-core machine.
_RAY_BATCH_TIMEOUT_S = 90


def _marked(**env: str) -> dict[str, Any]:
    return acp_entry(**{MARKER_NAME: os.environ[MARKER_NAME]}, **env)


async def _lines(tmp_path: Path, name: str, executor: LocalExecutor | RayExecutor, **env: str) -> list[dict[str, Any]]:
    config = load_config(write_config(tmp_path, {"agent": _marked(**env)}))
    items = [BatchItem(id=f"item-{n}", task=f"task {n}") for n in range(3)]
    with anyio.fail_after(_RAY_BATCH_TIMEOUT_S):
        async with open_batch(items, outdir=tmp_path / name, config=config, executor=executor) as batch:
            return [result.line async for result in batch]


def _shape(line: dict[str, Any]) -> dict[str, Any]:
    assert isinstance(line["run_id"], str) and isinstance(line["duration_ms"], int)
    assert isinstance(line["session_id"], str)
    return {key: value for key, value in line.items() if key not in ("run_id", "duration_ms", "session_id")}


async def test_a_ray_batch_has_the_local_shape(tmp_path: Path, ray_cluster: str) -> None:
    del ray_cluster
    local = await _lines(tmp_path, "local", LocalExecutor(workers=2))
    remote = await _lines(tmp_path, "ray", RayExecutor(workers=2))
    assert sorted(map(_shape, remote), key=lambda line: line["id"]) == sorted(
        map(_shape, local), key=lambda line: line["id"]
    )
    assert result_lines(tmp_path / "ray") and len(result_lines(tmp_path / "ray")) == 3
    runs = list_runs(tmp_path / "ray")
    assert sorted(run.run_id for run in runs) == sorted(line["run_id"] for line in remote)
    for line in remote:
        records = (tmp_path / "ray" / "runs" / f"{line['run_id']}.jsonl").read_text(encoding="utf-8").splitlines()
        types = [json.loads(record)["type"] for record in records]
        assert types[:2] == ["run/start", "prompt"] and types[-1] == "run/end"
        assert os.stat(tmp_path / "ray" / "runs" / f"{line['run_id']}.jsonl").st_mode & 0o077 == 0


async def test_a_ray_worker_leaves_no_setsid_grandchild(tmp_path: Path, ray_cluster: str) -> None:
    del ray_cluster
    pid_file = tmp_path / "grandchild.pid"
    lines = await _lines(
        tmp_path, "out", RayExecutor(workers=1), MOCK_GRANDCHILD_PID_FILE=str(pid_file), MOCK_GRANDCHILD_SETSID="1"
    )
    assert [line["stop_reason"] for line in lines] == ["completed"] * 3
    grandchild = int(pid_file.read_text(encoding="utf-8"))
    with anyio.fail_after(10):
        await wait_until_gone(grandchild)


async def test_ctrl_c_on_a_ray_batch_leaves_no_process_on_the_node(tmp_path: Path, ray_cluster: str) -> None:
    ready, pid_file = tmp_path / "ready", tmp_path / "grandchild.pid"
    slow = _marked(
        MOCK_HANG="1",
        MOCK_READY_FILE=str(ready),
        MOCK_GRANDCHILD_PID_FILE=str(pid_file),
        MOCK_GRANDCHILD_SETSID="1",
    )
    config = write_config(tmp_path, {"slow": slow})
    tasks = tasks_file(tmp_path / "tasks.jsonl", [{"id": f"s{n}", "task": "hang"} for n in range(3)])
    out = tmp_path / "out"
    process = await start_batch(
        str(tasks), "-o", str(out), "--config", str(config), "--executor", "ray", "--ray-address", ray_cluster,
        "--workers", "1", cwd=tmp_path,
    )  # fmt: skip
    async with killed_on_exit(process):
        with anyio.fail_after(_RAY_BATCH_TIMEOUT_S):
            await wait_for_file(ready)
            grandchild = int(await wait_for_file(pid_file))
        process.send_signal(signal.SIGINT)
        with anyio.fail_after(CLI_TIMEOUT_S):
            assert await process.wait() == 130
    with anyio.fail_after(10):
        await wait_until_gone(grandchild)
    assert not (out / "results.jsonl").read_bytes()  # the cancelled item has no line: a resume runs it
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert (summary["stopped_by"], summary["pending"]) == ("SIGINT", 3)
