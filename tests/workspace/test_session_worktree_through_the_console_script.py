"""A ``worktree`` session through the console script: every ``run --session`` is a new host process, and each one
continues in the session's worktree (recreated from its branch) with the earlier turns' edits; ``runs apply`` of a
turn applies the session's work up to that turn; ``sessions close`` removes what is left and keeps the branch with
changes; after a host was SIGKILLed mid-turn, the next ``run --session`` salvages the turn's edits onto the branch
and continues there."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from host.sessions import read_session_file
from tests.workspace._helpers import (
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


def _config(tmp_path: Path, repo: Path, **env: str) -> Path:
    switches = {"MOCK_FS_OPS_FROM_PROMPT": "1", "MOCK_SESSION_RESUME": "1", "MOCK_SESSION_DIR": str(tmp_path), **env}
    return worktree_config(tmp_path, repo, {"child": switches})


def _append(text: str) -> str:
    return json.dumps([["append", "notes.txt", text]])


async def _run(config: Path, state: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return await host_cli("run", "--config", str(config), "--state-dir", str(state), "--json", *args, cwd=cwd)


def _json(done: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


async def test_run_session_continues_in_the_sessions_worktree_across_processes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    config = _config(tmp_path, repo)
    before = user_state(repo)

    first = _json(await _run(config, state, tmp_path, _append("turn one\n")))
    session_id = first["session_id"]
    branch = f"subagent-host/{session_id}"
    assert worktree_paths(repo) == [str(repo)]  # the process closed its host: worktree removed, branch kept
    assert our_branches(repo) == [branch]

    second = _json(await _run(config, state, tmp_path, "--session", session_id, _append("turn two\n")))
    switched = await _run(config, state, tmp_path, "--session", session_id, "--workspace", "shared", "[]")

    assert second["session_id"] == session_id
    assert first["changes"]["branch"] == second["changes"]["branch"] == branch
    assert second["changes"]["files"] == [{"path": "notes.txt", "status": "added", "insertions": 2, "deletions": 0}]
    line = f"\n[changes: 1 file, +2 -0 on branch {branch}; apply with changes_apply]"
    assert second["output"][-1] == {"type": "text", "text": line}
    assert switched.returncode == 1
    message = f'session {session_id} works in workspace "worktree"; a later turn cannot switch it to "shared"'
    assert json.loads(switched.stdout)["error"] == message

    applied = await host_cli("runs", "apply", second["run_id"], "--state-dir", str(state), cwd=tmp_path)
    assert applied.returncode == 0, applied.stderr
    assert (repo / "notes.txt").read_text() == "turn one\nturn two\n"

    listed = await host_cli("sessions", "list", "--json", "--state-dir", str(state), cwd=tmp_path)
    shown = await host_cli("sessions", "show", session_id, "--state-dir", str(state), cwd=tmp_path)
    (summary,) = json.loads(listed.stdout)["sessions"]
    assert (summary["workspace"], summary["branch"]) == ("worktree", branch)
    assert f"workspace: worktree on branch {branch}\n" in shown.stdout.decode()
    closed = await host_cli("sessions", "close", session_id, "--state-dir", str(state), cwd=tmp_path)
    assert closed.returncode == 0, closed.stderr
    assert closed.stdout.decode() == f"closed session {session_id}\n"
    assert worktree_paths(repo) == [str(repo)]
    assert our_branches(repo) == [branch]  # it holds changes
    after = await _run(config, state, tmp_path, "--session", session_id, "[]")
    assert after.returncode != 0 and b"session-expired" in after.stdout
    assert worktree_paths(repo) == [str(repo)]
    (repo / "notes.txt").unlink()
    assert user_state(repo) == before


async def test_a_turn_without_changes_keeps_no_branch_and_the_next_starts_from_the_baseline(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    config = _config(tmp_path, repo)
    first = _json(await _run(config, state, tmp_path, "[]"))
    session_id = first["session_id"]
    assert "changes" not in first
    assert our_branches(repo) == [] and worktree_paths(repo) == [str(repo)]  # as a one-shot run without changes
    record = read_session_file(state, session_id)
    assert record is not None and record.worktree is not None
    (repo / "a.txt").write_text("the parent moved on\n")  # not part of the session's baseline

    second = _json(await _run(config, state, tmp_path, "--session", session_id, _append("two\n")))

    assert second["changes"]["base"] == record.worktree.base
    assert second["changes"]["files"] == [{"path": "notes.txt", "status": "added", "insertions": 1, "deletions": 0}]
    branch = f"subagent-host/{session_id}"
    assert git(repo, "show", f"{branch}:a.txt") == "one\ntwo\nthree\n"
    closed = await host_cli("sessions", "close", session_id, "--state-dir", str(state), cwd=tmp_path)
    assert closed.returncode == 0, closed.stderr
    assert our_branches(repo) == [branch]  # it holds changes
    assert worktree_paths(repo) == [str(repo)]


async def test_after_a_host_died_mid_turn_the_next_run_session_continues_with_its_edits(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    ready = tmp_path / "ready"
    config = _config(tmp_path, repo, MOCK_HANG_ON="hang", MOCK_READY_FILE=str(ready))
    first = _json(await _run(config, state, tmp_path, _append("turn one\n")))
    session_id = first["session_id"]
    ready.unlink()
    # The edit is applied, then the agent hangs on the word "hang" until the host is SIGKILLed.
    await sigkill_host_once_ready(
        "run",
        "--config",
        str(config),
        "--state-dir",
        str(state),
        "--session",
        session_id,
        _append("hang two\n"),
        ready=ready,
        cwd=tmp_path,
    )
    worktree = state / "worktrees" / session_id
    assert worktree_paths(repo) == [str(repo), str(worktree)]  # left locked, naming the dead pid

    third = _json(await _run(config, state, tmp_path, "--session", session_id, _append("turn three\n")))

    branch = f"subagent-host/{session_id}"
    assert git(repo, "show", f"{branch}:notes.txt") == "turn one\nhang two\nturn three\n"
    assert third["changes"]["files"] == [{"path": "notes.txt", "status": "added", "insertions": 3, "deletions": 0}]
    assert (state / "runs" / f"{session_id}.patch").is_file()  # the salvage of the killed turn, never applied
    assert not (repo / "notes.txt").exists()
    assert worktree_paths(repo) == [str(repo)]
    assert our_branches(repo) == [branch]


async def test_runs_prune_keeps_a_sessions_branch_while_a_kept_turn_names_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    config = _config(tmp_path, repo)
    first = _json(await _run(config, state, tmp_path, _append("one\n")))
    session_id = first["session_id"]
    second = _json(await _run(config, state, tmp_path, "--session", session_id, _append("two\n")))
    branch = f"subagent-host/{session_id}"

    pruned = await host_cli("runs", "prune", "--keep", "1", "--state-dir", str(state), cwd=tmp_path)

    assert pruned.returncode == 0, pruned.stderr
    runs = state / "runs"
    assert not (runs / f"{first['run_id']}.patch").exists()
    assert not (runs / f"{first['run_id']}.changes.json").exists()
    assert our_branches(repo) == [branch]  # the second turn's kept changes name it
    assert git(repo, "show", f"{branch}:notes.txt") == "one\ntwo\n"
    applied = await host_cli("runs", "apply", second["run_id"], "--state-dir", str(state), cwd=tmp_path)
    assert applied.returncode == 0, applied.stderr
    assert (repo / "notes.txt").read_text() == "one\ntwo\n"
