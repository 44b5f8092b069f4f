"""A batch item refused before any child starts with no closed failure line (here a ``worktree`` item outside a git
repository) carries the tool's host-built reason as ``error`` in its result line, through the console script, so
the operator can tell why it failed, with the failure's stable code (``error_code``); nothing was spawned, so there is
no run to name."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.batch._helpers import acp_entry, result_lines, run_batch, tasks_file, write_config

pytestmark = pytest.mark.anyio


async def test_a_worktree_item_outside_a_repository_says_why(tmp_path: Path) -> None:
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    config = write_config(tmp_path, {"agent": acp_entry()})
    tasks = tasks_file(tmp_path / "tasks.jsonl", [{"id": "only", "task": "t", "workspace": "worktree"}])
    done = await run_batch(str(tasks), "-o", str(tmp_path / "out"), "--config", str(config), cwd=outside)
    assert done.returncode == 1, done.stderr
    [line] = result_lines(tmp_path / "out")
    assert line["stop_reason"] == "error" and line["output"] == [] and line["run_id"] is None
    assert line["error"] == f'workspace = "worktree" needs a git repository: {outside} is not inside one'
    assert line["error_code"] == "WORKSPACE_NOT_A_REPOSITORY"
    assert "diagnostic" not in line
