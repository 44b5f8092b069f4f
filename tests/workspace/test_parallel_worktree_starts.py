"""Sixteen worktree starts on one repository at once, in sixteen processes, each get their own worktree: the
repository lock serialises what writes the shared ``.git``, so no ``index.lock`` (or any other) failure. And the
workspace API a session uses keeps one worktree across turns: each turn's delta is baseline → now, committed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Final

import anyio
import pytest

from host.workspace import Workspaces
from tests.cli._helpers import cli_env
from tests.workspace._helpers import git, make_repo, our_branches, user_state, worktree_paths

pytestmark = pytest.mark.anyio

_STARTS: Final = 16
_ONE_START: Final = """
import sys, anyio
from pathlib import Path
from host.workspace import Workspaces

async def main() -> None:
    workspaces = Workspaces(Path(sys.argv[1]))
    workspace = await workspaces.acquire(sys.argv[2], sys.argv[3])
    Path(workspace.cwd, sys.argv[3] + ".txt").write_text("mine\\n")
    changes = await workspaces.after_turn(workspace, sys.argv[3])
    assert changes is not None and [item.path for item in changes.files] == [sys.argv[3] + ".txt"]
    await workspaces.release(workspace)

anyio.run(main)
"""


async def test_sixteen_parallel_starts_on_one_repository_each_get_a_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "a.txt").write_text("dirty\n")
    state = tmp_path / "state"
    before = user_state(repo)
    failures: list[bytes] = []

    async def start(number: int) -> None:
        done = await anyio.run_process(
            [sys.executable, "-c", _ONE_START, str(state), str(repo), f"owner-{number}"],
            env=cli_env(),
            check=False,
            stdin=subprocess.DEVNULL,
        )
        if done.returncode != 0:
            failures.append(done.stderr)

    with anyio.fail_after(180):
        async with anyio.create_task_group() as group:
            for number in range(_STARTS):
                group.start_soon(start, number)
    assert failures == []
    assert sorted(our_branches(repo)) == sorted(f"subagent-host/owner-{number}" for number in range(_STARTS))
    assert worktree_paths(repo) == [str(repo)]
    assert user_state(repo) == before


async def test_a_session_keeps_its_worktree_across_turns(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    workspaces = Workspaces(tmp_path / "state")
    with anyio.fail_after(60):
        workspace = await workspaces.acquire(str(repo), "session-abc")
        (Path(workspace.cwd) / "first.txt").write_text("1\n")
        first = await workspaces.after_turn(workspace, "run-1")
        (Path(workspace.cwd) / "second.txt").write_text("2\n")
        second = await workspaces.after_turn(workspace, "run-2")
        await workspaces.release(workspace)
    assert first is not None and [item.path for item in first.files] == ["first.txt"]
    assert second is not None and [item.path for item in second.files] == ["first.txt", "second.txt"]
    assert first.branch == second.branch == "subagent-host/session-abc" and first.base == second.base
    log = git(repo, "log", "--format=%s", "subagent-host/session-abc").splitlines()
    assert log[:3] == [
        "subagent-host: changes of run run-2",
        "subagent-host: changes of run run-1",
        "subagent-host baseline",
    ]
    assert worktree_paths(repo) == [str(repo)]
