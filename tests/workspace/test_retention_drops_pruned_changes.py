"""Automatic retention (``host.keep_runs``) prunes a worktree run completely: with its transcript go its patch, its
changes file and its branch (``subagent-host/<session_id>``: the call's session, which no other run shares), as
``runs prune`` does; the kept runs keep theirs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.workspace._helpers import fs_ops, host_cli, make_repo, our_branches, worktree_config

pytestmark = pytest.mark.anyio


async def test_keep_runs_deletes_a_pruned_runs_branch_patch_and_changes_file(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    config = worktree_config(tmp_path, repo, {"agent": {"MOCK_FS_OPS": fs_ops(["write", "new.txt", "child\n"])}})
    config.write_text(config.read_text() + "[host]\nkeep_runs = 1\n", encoding="utf-8")
    state = tmp_path / "state"
    run_ids: list[str] = []
    branches: list[str] = []
    for _ in range(2):
        done = await host_cli("run", "--config", str(config), "--state-dir", str(state), "--json", "go", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        assert result["changes"]["branch"] == f"subagent-host/{result['session_id']}"
        run_ids.append(result["run_id"])
        branches.append(result["changes"]["branch"])
    first, second = run_ids
    runs = state / "runs"
    assert not (runs / f"{first}.jsonl").exists()  # retention pruned the first run ...
    assert not (runs / f"{first}.patch").exists()  # ... and everything it kept
    assert not (runs / f"{first}.changes.json").exists()
    assert our_branches(repo) == [branches[1]]
    assert (runs / f"{second}.patch").is_file()
    assert (runs / f"{second}.changes.json").is_file()
