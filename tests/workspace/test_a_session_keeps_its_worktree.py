"""A ``worktree`` session keeps one worktree across its turns (docs/behaviour.md#workspaces-sessions): warm or cold,
every turn's child works in ``<state>/worktrees/<session_id>`` on ``subagent-host/<session_id>`` and sees the earlier
turns' edits; each turn's patch is the whole delta since the baseline; the worktree stays while the child is warm,
``session_close`` removes it (the branch stays with changes); a cold session's worktree is removed and the next turn,
in the same host or a new one, checks the branch out again; a turn may not switch the session's workspace."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from host import CancelController, Host, ToolFailure, ToolSuccess
from host.config._loader import parse_config
from host.sessions import read_session_file
from tests.conftest import FAKE_DSH_RUNTIME, PYTHON
from tests.server._helpers import fake_agents
from tests.workspace._helpers import (
    call_child,
    git,
    make_repo,
    our_branches,
    session_worktree_config,
    success_value,
    user_state,
    wait_until_removed,
    worktree_paths,
)

pytestmark = pytest.mark.anyio

_TIMEOUT_S = 60


def _append(path: str, text: str) -> str:
    """A task the fake agent executes: append ``text`` to ``path`` in its cwd."""
    return json.dumps([["append", path, text]])


def _cwds(value: dict[str, Any]) -> tuple[str, str]:
    text = value["output"][0]["text"]
    process_cwd, session_cwd = text.split("\n")[:2]
    return process_cwd, session_cwd


async def test_a_warm_session_works_in_one_worktree_and_close_removes_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    before = user_state(repo)
    with anyio.fail_after(_TIMEOUT_S):
        async with Host.open(session_worktree_config(tmp_path, repo), state_dir=state) as host:
            first = success_value(await call_child(host, {"task": _append("notes.txt", "turn one\n")}))
            session_id = first["session_id"]
            worktree = state / "worktrees" / session_id
            pids = [agent.pid for agent in fake_agents(os.getpid())]
            assert worktree_paths(repo) == [str(repo), str(worktree)]  # kept after the turn
            second = success_value(
                await call_child(host, {"task": _append("notes.txt", "turn two\n"), "session_id": session_id})
            )
            assert [agent.pid for agent in fake_agents(os.getpid())] == pids  # the same warm child
            assert (worktree / "notes.txt").read_text() == "turn one\nturn two\n"
            result = await host.execute("session_close", {"session_id": session_id}, signal=CancelController().signal)
            assert isinstance(result, ToolSuccess)
            await wait_until_removed(worktree, repo)  # removed in the host's task group
            assert worktree_paths(repo) == [str(repo)]
    assert _cwds(first) == (str(worktree), str(worktree))
    assert _cwds(second) == (str(worktree), str(worktree))
    branch = f"subagent-host/{session_id}"
    assert first["changes"]["branch"] == second["changes"]["branch"] == branch
    assert first["changes"]["files"] == [{"path": "notes.txt", "status": "added", "insertions": 1, "deletions": 0}]
    # Cumulative: the second turn's delta is the whole session's since the baseline.
    assert second["changes"]["files"] == [{"path": "notes.txt", "status": "added", "insertions": 2, "deletions": 0}]
    patch = (state / "runs" / f"{second['run_id']}.patch").read_text()
    assert "+turn one" in patch and "+turn two" in patch
    assert our_branches(repo) == [branch]
    assert git(repo, "show", f"{branch}:notes.txt") == "turn one\nturn two\n"
    assert user_state(repo) == before
    assert not (repo / "notes.txt").exists()
    record = read_session_file(state, session_id)
    assert record is not None and record.state == "closed" and record.workspace == "worktree"
    assert record.worktree is not None and record.worktree.branch == branch


async def test_a_cold_session_in_a_new_host_recreates_its_worktree_from_the_branch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    config = session_worktree_config(tmp_path, repo, idle_ms=0)
    with anyio.fail_after(_TIMEOUT_S):
        async with Host.open(config, state_dir=state) as host:
            first = success_value(await call_child(host, {"task": _append("notes.txt", "turn one\n")}))
            session_id = first["session_id"]
            worktree = state / "worktrees" / session_id
            # Cold (idle 0: the child went down after the turn): the worktree goes, the branch holds the turn.
            await wait_until_removed(worktree, repo)
            assert worktree_paths(repo) == [str(repo)]
            assert git(repo, "show", f"subagent-host/{session_id}:notes.txt") == "turn one\n"
            second = success_value(
                await call_child(host, {"task": _append("notes.txt", "turn two\n"), "session_id": session_id})
            )
        assert worktree_paths(repo) == [str(repo)]
        assert our_branches(repo) == [f"subagent-host/{session_id}"]
        async with Host.open(config, state_dir=state) as host:
            third = success_value(
                await call_child(host, {"task": _append("notes.txt", "turn three\n"), "session_id": session_id})
            )
            assert (worktree / "notes.txt").read_text() == "turn one\nturn two\nturn three\n"
    assert _cwds(second) == (str(worktree), str(worktree))
    assert _cwds(third) == (str(worktree), str(worktree))
    assert third["changes"]["files"] == [{"path": "notes.txt", "status": "added", "insertions": 3, "deletions": 0}]
    assert third["changes"]["base"] == first["changes"]["base"]
    assert worktree_paths(repo) == [str(repo)]


async def test_an_idle_session_goes_cold_and_its_next_turn_recreates_the_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    with anyio.fail_after(_TIMEOUT_S):
        async with Host.open(session_worktree_config(tmp_path, repo, idle_ms=200), state_dir=state) as host:
            first = success_value(await call_child(host, {"task": _append("notes.txt", "turn one\n")}))
            session_id = first["session_id"]
            worktree = state / "worktrees" / session_id
            await wait_until_removed(worktree, repo)  # the reaper took the idle session cold, and its worktree went
            second = success_value(
                await call_child(host, {"task": _append("notes.txt", "turn two\n"), "session_id": session_id})
            )
            assert (worktree / "notes.txt").read_text() == "turn one\nturn two\n"
    assert _cwds(second) == (str(worktree), str(worktree))
    assert second["changes"]["files"][0]["insertions"] == 2
    assert worktree_paths(repo) == [str(repo)]


async def test_an_evicted_session_loses_its_worktree_until_its_next_turn(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    with anyio.fail_after(_TIMEOUT_S):
        async with Host.open(session_worktree_config(tmp_path, repo, max_warm=1), state_dir=state) as host:
            one = success_value(await call_child(host, {"task": _append("one.txt", "first\n")}))
            first_worktree = state / "worktrees" / one["session_id"]
            two = success_value(await call_child(host, {"task": _append("two.txt", "second\n")}))
            await wait_until_removed(first_worktree, repo)  # the bound took the first session cold: its worktree went
            second_worktree = state / "worktrees" / two["session_id"]
            assert worktree_paths(repo) == [str(repo), str(second_worktree)]
            again = success_value(
                await call_child(host, {"task": _append("one.txt", "again\n"), "session_id": one["session_id"]})
            )
            assert (first_worktree / "one.txt").read_text() == "first\nagain\n"
            assert not (first_worktree / "two.txt").exists()
    assert again["changes"]["files"] == [{"path": "one.txt", "status": "added", "insertions": 2, "deletions": 0}]
    assert worktree_paths(repo) == [str(repo)]
    assert sorted(our_branches(repo)) == sorted(f"subagent-host/{v['session_id']}" for v in (one, two))


@pytest.mark.parametrize(("idle_ms", "setups"), [(300000, 1), (0, 2)])
async def test_setup_runs_once_per_checkout_of_the_worktree(tmp_path: Path, idle_ms: float, setups: int) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    log = tmp_path / "setup.log"
    script = f"open({str(log)!r}, 'a').write('setup\\n'); open('.env', 'w').write('s')"
    config = session_worktree_config(tmp_path, repo, idle_ms=idle_ms, setup=[PYTHON, "-c", script])
    with anyio.fail_after(_TIMEOUT_S):
        async with Host.open(config, state_dir=state) as host:
            first = success_value(await call_child(host, {"task": _append("notes.txt", "one\n")}))
            session_id = first["session_id"]
            second = success_value(
                await call_child(host, {"task": _append("notes.txt", "two\n"), "session_id": session_id})
            )
    assert [file["path"] for file in second["changes"]["files"]] == ["notes.txt"]  # setup's .env is ignored
    assert log.read_text() == "setup\n" * setups  # a warm session's worktree is set up once; a recreated one again


async def test_a_later_turn_cannot_switch_the_sessions_workspace(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    with anyio.fail_after(_TIMEOUT_S):
        async with Host.open(session_worktree_config(tmp_path, repo, workspace="shared"), state_dir=state) as host:
            first = success_value(await call_child(host, {"task": _append("n.txt", "one\n"), "workspace": "worktree"}))
            session_id = first["session_id"]
            switched = await call_child(host, {"task": "[]", "session_id": session_id, "workspace": "shared"})
            # Without the argument a later turn inherits the session's worktree (not the entry's "shared").
            inherited = success_value(
                await call_child(host, {"task": _append("n.txt", "two\n"), "session_id": session_id})
            )
    assert isinstance(switched, ToolFailure)
    assert switched.error.message == (
        f'session {session_id} works in workspace "worktree"; a later turn cannot switch it to "shared"'
    )
    assert switched.error.info is not None and switched.error.info.code == "SESSION_WORKSPACE"
    assert inherited["changes"]["files"][0]["insertions"] == 2
    assert not (repo / "n.txt").exists()
    assert worktree_paths(repo) == [str(repo)]


async def test_a_warm_dsh_sdk_session_keeps_its_runtime_in_the_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    record = tmp_path / "init.jsonl"
    entry: dict[str, Any] = {
        "kind": "dsh-sdk",
        "command": PYTHON,
        "args": [str(FAKE_DSH_RUNTIME)],
        "dispose_eof_grace_ms": 300,
        "dispose_grace_ms": 300,
        "cwd": str(repo),
        "workspace": "worktree",
        "env": {"FAKE_ECHO_CWD": "1", "FAKE_RECORD_INIT": str(record)},
    }
    with anyio.fail_after(_TIMEOUT_S):
        async with Host.open(parse_config({"providers": {"child": entry}}), state_dir=state) as host:
            first = success_value(await call_child(host, {"task": "one"}))
            session_id = first["session_id"]
            second = success_value(await call_child(host, {"task": "two", "session_id": session_id}))
    worktree = state / "worktrees" / session_id
    for value in (first, second):
        assert f"cwd={worktree}" in value["output"][0]["text"].split("\n")
    (init,) = [json.loads(line) for line in record.read_text().splitlines()]  # one runtime served both turns
    assert init.get("cwd", init.get("params", {}).get("cwd")) == str(worktree)
    assert worktree_paths(repo) == [str(repo)] and our_branches(repo) == []
