"""``Workspaces.fork`` starts a fork's worktree from the source session's work only when that work is in the fork's
repository (docs/behaviour.md#workspaces-sessions): the source branch's tip (``changed`` when it holds changes), else
its baseline commit; a source in another repository, or one whose branch and baseline commit are both gone, gives a
fresh worktree from the parent's tree, as for any new session, never an error. A fork's worktree its host left
behind is salvaged from the source's baseline (its lock reason names it). Real git, no child."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from host.workspace import Baseline, Workspace, Workspaces, read_changes_file
from host.workspace._worktree import let_go_path
from tests.workspace._helpers import git, make_repo, our_branches, worktree_paths

pytestmark = pytest.mark.anyio


async def _source(workspaces: Workspaces, repo: Path, *, edit: bool) -> Workspace:
    """A session's worktree that recorded one turn (``edit``: a new file) and was let go, its branch kept."""
    source = await workspaces.acquire(str(repo), "source")
    if edit:
        (Path(source.path) / "n.txt").write_text("source\n")
    await workspaces.after_turn(source, "turn-1")
    await workspaces.release(source, keep_branch=True)
    return source


async def test_a_fork_starts_at_the_source_branch_tip_with_the_source_baseline(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    workspaces = Workspaces(tmp_path / "state")
    source = await _source(workspaces, repo, edit=True)
    (repo / "a.txt").write_text("the parent moved on\n")
    fork = await workspaces.fork(source, str(repo), "fork")
    try:
        assert fork.baseline == source.baseline and fork.changed
        assert fork.branch == "subagent-host/fork" and fork.path == str(tmp_path / "state" / "worktrees" / "fork")
        assert (
            git(repo, "rev-parse", "subagent-host/fork").strip()
            == git(repo, "rev-parse", "subagent-host/source").strip()
        )
        assert (Path(fork.path) / "n.txt").read_text() == "source\n"
        assert (Path(fork.path) / "a.txt").read_text() == "one\ntwo\nthree\n"
    finally:
        await workspaces.release(fork, keep_branch=False)
    assert our_branches(repo) == ["subagent-host/source"] and worktree_paths(repo) == [str(repo)]


async def test_a_fork_of_a_source_in_another_repository_starts_from_the_parents_tree(tmp_path: Path) -> None:
    source_repo = make_repo(tmp_path / "source-repo")
    repo = make_repo(tmp_path / "repo")
    (repo / "mine.txt").write_text("the parent's own\n")
    workspaces = Workspaces(tmp_path / "state")
    source = await _source(workspaces, source_repo, edit=True)
    fork = await workspaces.fork(source, str(repo), "fork")
    try:
        assert fork.repo.toplevel == str(repo) and fork.baseline != source.baseline and not fork.changed
        assert (Path(fork.path) / "mine.txt").read_text() == "the parent's own\n"
        assert not (Path(fork.path) / "n.txt").exists()
        assert git(repo, "rev-parse", "subagent-host/fork").strip() == fork.baseline.commit
    finally:
        await workspaces.release(fork, keep_branch=False)
    assert our_branches(repo) == [] and our_branches(source_repo) == ["subagent-host/source"]


async def test_a_fork_of_a_source_whose_branch_and_baseline_are_gone_starts_from_the_parents_tree(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    workspaces = Workspaces(tmp_path / "state")
    source = await _source(workspaces, repo, edit=False)
    git(repo, "branch", "-D", "subagent-host/source")
    lost = dataclasses.replace(source, baseline=Baseline("0" * 40, source.baseline.tree))
    (repo / "mine.txt").write_text("the parent's own\n")
    fork = await workspaces.fork(lost, str(repo), "fork")
    try:
        assert fork.baseline != source.baseline and not fork.changed
        assert (Path(fork.path) / "mine.txt").read_text() == "the parent's own\n"
    finally:
        await workspaces.release(fork, keep_branch=False)
    assert our_branches(repo) == [] and worktree_paths(repo) == [str(repo)]


async def test_a_forks_worktree_left_by_its_host_is_salvaged_from_the_sources_baseline(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    workspaces = Workspaces(tmp_path / "state")
    source = await _source(workspaces, repo, edit=True)
    fork = await workspaces.fork(source, str(repo), "fork")
    (Path(fork.path) / "m.txt").write_text("fork\n")
    let_go_path(fork.path)  # as after a removal that was cut off: its lock reason names no live holder any more
    assert await workspaces.reclaim() == ["fork"]
    stored = read_changes_file(workspaces.runs_dir, "fork")
    assert stored is not None and stored.changes.base == source.baseline.commit
    assert sorted(file.path for file in stored.changes.files) == ["m.txt", "n.txt"]
    assert git(repo, "show", "subagent-host/fork:m.txt") == "fork\n"
    assert worktree_paths(repo) == [str(repo)]
    assert sorted(our_branches(repo)) == ["subagent-host/fork", "subagent-host/source"]
