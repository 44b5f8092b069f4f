"""A background worktree job carries its ``changes`` in structured form, as a foreground result does:
``Host.wait_job``'s outcome has them (also for a job that failed after editing: its branch and patch are kept),
and a job that changed nothing has none."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from host import Host, load_config
from host.cancel import CancelController
from host.tools import ToolSuccess
from tests.workspace._helpers import fs_ops, make_repo, our_branches, worktree_config

pytestmark = pytest.mark.anyio

_TIMEOUT_S = 60


async def _job_outcome(tmp_path: Path, **env: str) -> Any:
    repo = make_repo(tmp_path / "repo")
    config = load_config(worktree_config(tmp_path, repo, {"agent": env}))
    with anyio.fail_after(_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(repo), state_dir=tmp_path / "state") as host:
            started = await host.execute(
                "delegate_agent", {"task": "go", "run_in_background": True}, signal=CancelController().signal
            )
            assert isinstance(started, ToolSuccess) and isinstance(started.value, dict)
            outcome = await host.wait_job(str(started.value["job_id"]))
    return outcome, our_branches(repo)


async def test_a_completed_worktree_job_carries_its_changes(tmp_path: Path) -> None:
    outcome, branches = await _job_outcome(tmp_path, MOCK_FS_OPS=fs_ops(["write", "new.txt", "from the job\n"]))
    assert outcome.status == "completed"
    assert outcome.changes is not None
    assert outcome.changes["files"] == [{"path": "new.txt", "status": "added", "insertions": 1, "deletions": 0}]
    assert (outcome.changes["insertions"], outcome.changes["deletions"]) == (1, 0)
    assert branches == [outcome.changes["branch"]]
    assert outcome.output is not None and "[changes: 1 file" in outcome.output


async def test_a_failed_worktree_job_still_carries_the_changes_it_kept(tmp_path: Path) -> None:
    edit = fs_ops(["write", "a.txt", "edited then crashed\n"])
    outcome, branches = await _job_outcome(tmp_path, MOCK_FS_OPS=edit, MOCK_CRASH_AFTER_CHUNK="1")
    assert outcome.status == "failed"
    assert outcome.changes is not None and [f["path"] for f in outcome.changes["files"]] == ["a.txt"]
    assert branches == [outcome.changes["branch"]]


async def test_a_worktree_job_without_changes_has_none(tmp_path: Path) -> None:
    outcome, branches = await _job_outcome(tmp_path)
    assert outcome.status == "completed"
    assert outcome.changes is None
    assert branches == []
