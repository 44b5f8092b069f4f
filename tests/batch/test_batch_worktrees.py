"""``batch --workspace worktree`` and the item field ``workspace`` through the console script on a real repository:
items edit files in parallel worktrees, each result line carries its ``changes``, the parent's tree is untouched,
OUTDIR is the state directory (``runs apply --state-dir OUTDIR RUN_ID`` reproduces a patch), and a retried
worktree item leaves no worktree or branch per failed attempt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from host import BatchItem, LocalExecutor, load_config, open_batch
from tests.batch._helpers import acp_entry, result_lines, run_batch, tasks_file, write_config
from tests.workspace._helpers import fs_ops, git, host_cli, make_repo, our_branches, user_state, worktree_paths

pytestmark = pytest.mark.anyio


def _session_of(outdir: Path, run_id: str) -> str:
    """The session id the run's ``run/start`` record names."""
    for line in (outdir / "runs" / f"{run_id}.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("type") == "run/start":
            return str(record["data"]["session_id"])
    raise AssertionError("no run/start record")


def _two_editors(tmp_path: Path) -> Path:
    return write_config(
        tmp_path,
        {
            "one": acp_entry(MOCK_FS_OPS=fs_ops(["write", "a.txt", "one\nTWO by child one\nthree\n"])),
            "two": acp_entry(MOCK_FS_OPS=fs_ops(["write", "new.txt", "made by child two\n"], ["delete", "b.txt"])),
        },
    )


async def test_worktree_items_edit_in_parallel_and_runs_apply_reproduces_a_patch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    config = _two_editors(tmp_path)
    tasks = tasks_file(
        tmp_path / "tasks.jsonl",
        [
            {"id": "first", "task": "edit a", "provider": "one"},
            {"id": "second", "task": "add new", "provider": "two", "workspace": "worktree"},
            {"id": "third", "task": "shared", "provider": "one", "workspace": "shared", "cwd": str(tmp_path / "x")},
        ],
    )
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "a.txt").write_text("untouched\n")
    before, status_before = user_state(repo), git(repo, "status", "--porcelain")
    outdir = tmp_path / "out"
    done = await run_batch(
        str(tasks), "-o", str(outdir), "--config", str(config), "--cwd", str(repo), "--workspace", "worktree",
        "--workers", "3", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = {line["id"]: line for line in result_lines(outdir)}
    assert {item_id: line["stop_reason"] for item_id, line in lines.items()} == dict.fromkeys(lines, "completed")
    first, second = lines["first"]["changes"], lines["second"]["changes"]
    assert first["files"] == [{"path": "a.txt", "status": "modified", "insertions": 1, "deletions": 1}]
    assert sorted((f["path"], f["status"]) for f in second["files"]) == [("b.txt", "deleted"), ("new.txt", "added")]
    assert first["branch"] == f"subagent-host/{_session_of(outdir, lines['first']['run_id'])}"  # the item's session
    assert "changes" not in lines["third"]  # item field "shared" beats --workspace worktree
    assert (tmp_path / "x" / "a.txt").read_text() == "one\nTWO by child one\nthree\n"  # it ran in its own cwd
    # The parent's tree is untouched; only our branches were added; no worktree is left.
    assert (repo / "a.txt").read_text() == "one\ntwo\nthree\n"
    assert not (repo / "new.txt").exists()
    assert git(repo, "status", "--porcelain") == status_before
    assert user_state(repo) == before
    assert worktree_paths(repo) == [str(repo)]
    assert sorted(our_branches(repo)) == sorted([first["branch"], second["branch"]])
    # OUTDIR is the state directory: the patches are there, and runs apply applies one.
    for line in (lines["first"], lines["second"]):
        assert (outdir / "runs" / f"{line['run_id']}.patch").stat().st_mode & 0o777 == 0o600
    applied = await host_cli("runs", "apply", "--state-dir", str(outdir), lines["second"]["run_id"], cwd=tmp_path)
    assert applied.returncode == 0, applied.stderr
    assert (repo / "new.txt").read_text() == "made by child two\n"
    assert not (repo / "b.txt").exists()
    assert (repo / "a.txt").read_text() == "one\ntwo\nthree\n"
    listed = await host_cli("runs", "list", "--state-dir", str(outdir), "--json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert {row["run_id"] for row in json.loads(listed.stdout)["runs"]} >= {
        lines["first"]["run_id"],
        lines["second"]["run_id"],
    }


async def test_a_retried_worktree_item_keeps_only_its_last_attempts_branch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    edit = fs_ops(["write", "a.txt", "edited then crashed\n"])
    config = load_config(write_config(tmp_path, {"agent": acp_entry(MOCK_FS_OPS=edit, MOCK_CRASH_AFTER_CHUNK="1")}))
    outdir = tmp_path / "out"
    async with open_batch(
        [BatchItem(id="only", task="edit", workspace="worktree")],
        outdir=outdir,
        config=config,
        cwd=repo,
        executor=LocalExecutor(workers=1),
        retries=2,
        retry_backoff_s=0.01,
    ) as batch:
        lines = [result.line async for result in batch]
    assert [line["attempts"] for line in lines] == [3]
    assert "stage: process; category: process-exit" in lines[0]["diagnostic"]
    # Three attempts, each with changes: only the last attempt's branch, patch and changes file are kept.
    assert our_branches(repo) == [lines[0]["changes"]["branch"]]
    assert sorted(path.name for path in (outdir / "runs").glob("*.patch")) == [f"{lines[0]['run_id']}.patch"]
    assert len(list((outdir / "runs").glob("*.changes.json"))) == 1
    assert worktree_paths(repo) == [str(repo)]
    assert not [path for path in (outdir / "worktrees").iterdir() if not path.name.startswith(".")]
