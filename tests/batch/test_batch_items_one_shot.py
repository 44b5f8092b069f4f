"""A batch keeps no child warm after its item, and an item is one-shot: each result line names the item's session
(the one its run record carries), which is never continued, so a shared-workspace item writes no session file; a
worktree item's session file is kept (it names the kept branch and patch)."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from host import BatchItem, LocalExecutor, load_config, open_batch
from host.sessions import is_session_id
from tests.batch._helpers import acp_entry, write_config
from tests.workspace._helpers import fs_ops, make_repo

pytestmark = pytest.mark.anyio


def _session_of_run(outdir: Path, run_id: str) -> str:
    for line in (outdir / "runs" / f"{run_id}.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["type"] == "run/start":
            return str(record["data"]["session_id"])
    raise AssertionError("no run/start record")


async def test_a_shared_item_names_its_runs_session_and_writes_no_session_file(tmp_path: Path) -> None:
    # The entry keeps its default session_idle_ms (300 s): outside a batch its child would stay warm.
    config = load_config(write_config(tmp_path, {"fast": acp_entry()}))
    items = [BatchItem(id=f"t{n}", task="x") for n in range(3)]
    outdir = tmp_path / "out"
    lines: dict[str, dict[str, object]] = {}
    with anyio.fail_after(60):
        async with open_batch(items, outdir=outdir, config=config, executor=LocalExecutor(workers=1)) as batch:
            async for result in batch:
                lines[result.id] = result.line
    assert sorted(lines) == ["t0", "t1", "t2"]
    for line in lines.values():
        assert line["stop_reason"] == "completed"
        session_id, run_id = line["session_id"], line["run_id"]
        assert isinstance(session_id, str) and is_session_id(session_id)
        assert isinstance(run_id, str) and _session_of_run(outdir, run_id) == session_id
    assert not (outdir / "sessions").exists() or not any((outdir / "sessions").iterdir())


async def test_a_worktree_item_keeps_its_cold_session_file(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    entry = acp_entry(MOCK_FS_OPS=fs_ops(["write", "a.txt", "changed\n"]))
    config = load_config(write_config(tmp_path, {"edit": entry}))
    outdir = tmp_path / "out"
    items = [BatchItem(id="w", task="edit", workspace="worktree")]
    with anyio.fail_after(60):
        async with open_batch(items, outdir=outdir, config=config, cwd=repo) as batch:
            lines = [result.line async for result in batch]
    assert [line["stop_reason"] for line in lines] == ["completed"]
    record = json.loads((outdir / "sessions" / f"{lines[0]['session_id']}.json").read_text(encoding="utf-8"))
    assert (record["state"], record["turns"], record["workspace"]) == ("cold", 1, "worktree")
