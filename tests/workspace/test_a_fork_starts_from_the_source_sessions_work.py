"""A forked ``worktree`` session starts from the source session's files, not the parent's tree
(docs/behaviour.md#workspaces-sessions): its worktree is ``subagent-host/<fork>`` made at the tip of the source's
branch with the source's baseline, so the fork's changes are cumulative from the same point as the source's and
``changes_apply`` of the fork's turn brings the source's recorded work and the fork's own to the parent's tree; the
source's worktree and branch are untouched. A source closed without changes (its branch deleted) forks from its
baseline commit; a ``shared`` source's fork works where the fork asks (its own worktree from the parent's tree, or
the source's ``shared`` workspace it inherits). A cancel or a failing ``setup`` during the fork's worktree leaves no
worktree and no fork branch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from host import CancelController, Host, ToolFailure, ToolResult, ToolSuccess
from host.config import HostConfig
from host.sessions import read_session_file
from tests.conftest import PYTHON
from tests.sdk_provider._helpers import wait_for_file
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


def _fork_config(tmp_path: Path, repo: Path, **keys: Any) -> HostConfig:
    """The session worktree entry whose fake agent also forks (``MOCK_SESSION_FORK``)."""
    return session_worktree_config(tmp_path, repo, MOCK_SESSION_FORK="1", **keys)


def _ops(*ops: list[str]) -> str:
    """A task the fake agent executes: file edits in its cwd."""
    return json.dumps(list(ops))


def _process_cwd(value: dict[str, Any]) -> str:
    return value["output"][0]["text"].split("\n")[0]


def _files(value: dict[str, Any]) -> dict[str, tuple[str, int]]:
    return {file["path"]: (file["status"], file["insertions"]) for file in value["changes"]["files"]}


async def test_a_fork_works_on_from_the_sources_files_and_applies_both(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    before = user_state(repo)
    with anyio.fail_after(_TIMEOUT_S):
        async with Host.open(_fork_config(tmp_path, repo), state_dir=state) as host:
            source = success_value(await call_child(host, {"task": _ops(["append", "n.txt", "source\n"])}))
            source_id = source["session_id"]
            source_tip = git(repo, "rev-parse", f"subagent-host/{source_id}").strip()
            task = _ops(["append", "n.txt", "fork\n"], ["write", "m.txt", "fork only\n"])
            fork = success_value(await call_child(host, {"task": task, "fork_session_id": source_id}))
            fork_id = fork["session_id"]
            fork_worktree = state / "worktrees" / fork_id
            source_worktree = state / "worktrees" / source_id
            assert (fork_worktree / "n.txt").read_text() == "source\nfork\n"
            assert not (source_worktree / "m.txt").exists()
            assert (source_worktree / "n.txt").read_text() == "source\n"
            again = success_value(
                await call_child(host, {"task": _ops(["append", "n.txt", "main\n"]), "session_id": source_id})
            )
            applied = await host.execute("changes_apply", {"run_id": fork["run_id"]}, signal=CancelController().signal)
    assert fork_id != source_id
    assert _process_cwd(fork) == str(fork_worktree)
    assert fork["changes"]["branch"] == f"subagent-host/{fork_id}"
    assert fork["changes"]["base"] == source["changes"]["base"]  # the source's baseline: cumulative from there
    assert _files(fork) == {"n.txt": ("added", 2), "m.txt": ("added", 1)}
    # The source went on by itself: its branch started where the fork's did, and holds nothing of the fork's.
    assert _files(again) == {"n.txt": ("added", 2)}
    assert git(repo, "rev-parse", f"subagent-host/{source_id}~1").strip() == source_tip
    assert git(repo, "show", f"subagent-host/{source_id}:n.txt") == "source\nmain\n"
    assert git(repo, "show", f"subagent-host/{fork_id}:n.txt") == "source\nfork\n"
    assert git(repo, "rev-parse", f"subagent-host/{fork_id}~1").strip() == source_tip
    assert sorted(our_branches(repo)) == sorted([f"subagent-host/{source_id}", f"subagent-host/{fork_id}"])
    assert worktree_paths(repo) == [str(repo)]
    # runs apply of the fork's turn: the source's recorded work and the fork's own.
    assert isinstance(applied, ToolSuccess), applied
    assert (repo / "n.txt").read_text() == "source\nfork\n"
    assert (repo / "m.txt").read_text() == "fork only\n"
    assert user_state(repo) == before
    record = read_session_file(state, fork_id)
    source_record = read_session_file(state, source_id)
    assert record is not None and record.worktree is not None and record.workspace == "worktree"
    assert source_record is not None and source_record.worktree is not None
    assert record.worktree.branch == f"subagent-host/{fork_id}"
    assert (record.worktree.base, record.worktree.base_tree) == (
        source_record.worktree.base,
        source_record.worktree.base_tree,
    )


async def test_a_fork_continued_cold_in_a_new_host_keeps_the_sources_baseline(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    config = _fork_config(tmp_path, repo, idle_ms=0)
    with anyio.fail_after(_TIMEOUT_S):
        async with Host.open(config, state_dir=state) as host:
            source = success_value(await call_child(host, {"task": _ops(["append", "n.txt", "source\n"])}))
            fork = success_value(await call_child(host, {"task": _ops(), "fork_session_id": source["session_id"]}))
        async with Host.open(config, state_dir=state) as host:
            task = _ops(["append", "n.txt", "fork\n"])
            again = success_value(await call_child(host, {"task": task, "session_id": fork["session_id"]}))
            closed = await host.execute(
                "session_close", {"session_id": fork["session_id"]}, signal=CancelController().signal
            )
            assert isinstance(closed, ToolSuccess)
    fork_branch = f"subagent-host/{fork['session_id']}"
    # The fork's first turn changed nothing itself, yet its delta (cumulative) is the source's recorded work.
    assert _files(fork) == {"n.txt": ("added", 1)} and fork["changes"]["branch"] == fork_branch
    assert again["changes"]["base"] == source["changes"]["base"]
    assert _files(again) == {"n.txt": ("added", 2)}
    assert git(repo, "show", f"{fork_branch}:n.txt") == "source\nfork\n"
    assert sorted(our_branches(repo)) == sorted([f"subagent-host/{source['session_id']}", fork_branch])
    assert worktree_paths(repo) == [str(repo)]


async def _wait_until_no_branches(repo: Path) -> None:
    """Poll until no ``subagent-host/*`` branch is left (deleted right after the worktree's removal)."""
    while True:
        if not our_branches(repo):
            return
        await anyio.sleep(0.02)


async def test_a_fork_of_a_source_closed_without_changes_starts_from_its_baseline(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    with anyio.fail_after(_TIMEOUT_S):
        async with Host.open(_fork_config(tmp_path, repo), state_dir=state) as host:
            source = success_value(await call_child(host, {"task": _ops()}))
            source_id = source["session_id"]
            assert "changes" not in source
            closed = await host.execute("session_close", {"session_id": source_id}, signal=CancelController().signal)
            assert isinstance(closed, ToolSuccess)
            await wait_until_removed(state / "worktrees" / source_id, repo)
            await _wait_until_no_branches(repo)  # closed without changes: its branch is deleted
            (repo / "a.txt").write_text("the parent moved on\n")  # a fresh baseline would hold this
            fork = success_value(
                await call_child(host, {"task": _ops(["append", "x.txt", "x\n"]), "fork_session_id": source_id})
            )
            fork_worktree = state / "worktrees" / fork["session_id"]
            assert (fork_worktree / "a.txt").read_text() == "one\ntwo\nthree\n"
    source_record = read_session_file(state, source_id)
    assert source_record is not None and source_record.worktree is not None
    assert fork["changes"]["base"] == source_record.worktree.base
    assert _files(fork) == {"x.txt": ("added", 1)}  # not a.txt: the fork's baseline is the source's
    assert our_branches(repo) == [f"subagent-host/{fork['session_id']}"]


async def test_a_fork_of_a_shared_source_works_where_it_asks(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    with anyio.fail_after(_TIMEOUT_S):
        async with Host.open(_fork_config(tmp_path, repo), state_dir=state) as host:
            task = _ops(["append", "n.txt", "shared\n"])
            source = success_value(await call_child(host, {"task": task, "workspace": "shared"}))
            source_id = source["session_id"]
            assert (repo / "n.txt").read_text() == "shared\n"
            # No workspace asked: the fork takes the source's (shared), not the entry's.
            inherited = success_value(await call_child(host, {"task": _ops(), "fork_session_id": source_id}))
            # A worktree asked: a fresh one from the parent's tree (which holds the shared source's edit).
            task = _ops(["append", "n.txt", "fork\n"])
            own = success_value(
                await call_child(host, {"task": task, "fork_session_id": source_id, "workspace": "worktree"})
            )
            own_worktree = state / "worktrees" / own["session_id"]
            assert (own_worktree / "n.txt").read_text() == "shared\nfork\n"
    assert _process_cwd(inherited) == str(repo) and "changes" not in inherited
    assert _process_cwd(own) == str(own_worktree)
    assert _files(own) == {"n.txt": ("modified", 1)}  # the baseline is the parent's tree, with n.txt in it
    record = read_session_file(state, inherited["session_id"])
    assert record is not None and record.workspace == "shared" and record.worktree is None


def _gated_setup(gate: Path, started: Path, seen: Path) -> list[str]:
    """A setup that succeeds, unless ``gate`` says ``fail`` (exit 3) or ``hang`` (marks ``started``, then sleeps);
    either first writes what its worktree's ``n.txt`` holds to ``seen``."""
    script = (
        "import os, sys, time\n"
        f"mode = open({str(gate)!r}).read() if os.path.exists({str(gate)!r}) else ''\n"
        f"if mode: open({str(seen)!r}, 'w').write(open('n.txt').read() if os.path.exists('n.txt') else 'missing')\n"
        "if mode == 'fail': sys.exit(3)\n"
        f"if mode == 'hang': open({str(started)!r}, 'w').write('x'); time.sleep(120)\n"
    )
    return [PYTHON, "-c", script]


@pytest.mark.parametrize("mode", ["fail", "hang"])
async def test_a_forks_failed_or_cancelled_worktree_leaves_nothing_and_the_source_untouched(
    tmp_path: Path, mode: str
) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    gate, started, seen = tmp_path / "gate", tmp_path / "setup-started", tmp_path / "seen"
    config = _fork_config(tmp_path, repo, setup=_gated_setup(gate, started, seen))
    controller = CancelController()
    with anyio.fail_after(_TIMEOUT_S):
        async with Host.open(config, state_dir=state) as host:
            source = success_value(await call_child(host, {"task": _ops(["append", "n.txt", "source\n"])}))
            source_id = source["session_id"]
            source_tip = git(repo, "rev-parse", f"subagent-host/{source_id}").strip()
            gate.write_text(mode)
            result: ToolResult | None = None
            async with anyio.create_task_group() as group:

                async def cancel_once_setup_runs() -> None:
                    await wait_for_file(started)
                    controller.cancel("stop")

                if mode == "hang":
                    group.start_soon(cancel_once_setup_runs)
                task = _ops(["append", "n.txt", "fork\n"])
                result = await call_child(host, {"task": task, "fork_session_id": source_id}, controller.signal)
            source_worktree = state / "worktrees" / source_id
            assert worktree_paths(repo) == [str(repo), str(source_worktree)]  # the warm source keeps its own
            assert (source_worktree / "n.txt").read_text() == "source\n"
            assert our_branches(repo) == [f"subagent-host/{source_id}"]
            gate.write_text("")
            again = success_value(
                await call_child(host, {"task": _ops(["append", "n.txt", "more\n"]), "session_id": source_id})
            )
    assert isinstance(result, ToolFailure), result
    assert seen.read_text() == "source\n"  # the fork's setup ran in a worktree of the source's work
    if mode == "fail":
        assert "stage: workspace; category: setup-failed" in result.error.message
    assert [entry.name for entry in (state / "worktrees").iterdir() if not entry.name.startswith(".")] == []
    assert git(repo, "rev-parse", f"subagent-host/{source_id}~1").strip() == source_tip
    assert _files(again) == {"n.txt": ("added", 2)}
    assert our_branches(repo) == [f"subagent-host/{source_id}"]
