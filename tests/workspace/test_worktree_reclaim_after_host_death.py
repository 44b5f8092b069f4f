"""SIGKILL of the host mid-run leaves its worktree locked with a dead pid; the next host start (here ``runs prune``,
and any command that opens a ``Host``) keeps its delta as a patch and a branch, never applied, and removes it."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from tests.workspace._helpers import (
    fs_ops,
    git,
    host_cli,
    make_repo,
    our_branches,
    sigkill_host_once_ready,
    user_state,
    worktree_config,
    worktree_paths,
)

pytestmark = pytest.mark.anyio


def _a_session_holds_a_worktree(state: Path) -> bool:
    for path in (state / "sessions").glob("*.json"):
        with contextlib.suppress(OSError, ValueError):
            if json.loads(path.read_bytes()).get("worktree"):
                return True
    return False


async def _killed_mid_run(tmp_path: Path, repo: Path, state: Path) -> str:
    """Start a worktree run whose child edits and then hangs; SIGKILL the host; return the worktree's owner (the
    call's session id, which names its directory, its branch and the salvaged patch)."""
    ready = tmp_path / "ready"
    ops = fs_ops(["write", "salvaged.txt", "kept\n"], ["write", "a.txt", "one\nTWO\nthree\n"])
    config = worktree_config(
        tmp_path, repo, {"child": {"MOCK_FS_OPS": ops, "MOCK_HANG": "1", "MOCK_READY_FILE": str(ready)}}
    )
    # Killed once the run's session holds the worktree: its file names it (written in a worker thread, which on a
    # loaded machine can still be on its way when the child is already working).
    await sigkill_host_once_ready(
        "run",
        "--config",
        str(config),
        "--state-dir",
        str(state),
        "go",
        ready=ready,
        cwd=tmp_path,
        until=lambda: _a_session_holds_a_worktree(state),
    )
    (worktree,) = [entry for entry in (state / "worktrees").iterdir() if not entry.name.startswith(".")]
    return worktree.name


async def test_the_next_host_start_reclaims_a_dead_hosts_worktree_and_keeps_its_changes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    before = user_state(repo)
    run_id = await _killed_mid_run(tmp_path, repo, state)
    worktree = state / "worktrees" / run_id
    assert worktree_paths(repo) == [str(repo), str(worktree)]
    assert "pid=" in git(repo, "worktree", "list", "--porcelain")  # locked, the reason naming the dead pid

    pruned = await host_cli("runs", "prune", "--keep", "100", "--state-dir", str(state), cwd=tmp_path)
    assert pruned.returncode == 0, pruned.stderr

    assert worktree_paths(repo) == [str(repo)]
    assert not worktree.exists()
    assert our_branches(repo) == [f"subagent-host/{run_id}"]
    assert git(repo, "show", f"subagent-host/{run_id}:salvaged.txt") == "kept\n"
    patch = (state / "runs" / f"{run_id}.patch").read_text()
    assert "+kept" in patch and "+TWO" in patch
    assert (repo / "a.txt").read_text() == "one\ntwo\nthree\n"  # never applied automatically
    assert not (repo / "salvaged.txt").exists()
    check = await host_cli("runs", "apply", run_id, "--check", "--state-dir", str(state), cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    assert user_state(repo) == before


async def test_a_host_opened_by_run_reclaims_too(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    run_id = await _killed_mid_run(tmp_path, repo, state)
    (tmp_path / "other").mkdir()
    config = worktree_config(tmp_path / "other", repo, {"echo": {}})
    done = await host_cli(
        "run", "--config", str(config), "--workspace", "shared", "--state-dir", str(state), "hi", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert worktree_paths(repo) == [str(repo)]
    assert our_branches(repo) == [f"subagent-host/{run_id}"]
    assert (state / "runs" / f"{run_id}.patch").is_file()
