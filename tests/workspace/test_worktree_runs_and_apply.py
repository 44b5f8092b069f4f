"""``workspace = "worktree"`` through the console script on real repositories: parallel children in their own
worktrees, the parent's work in the baseline but not in the patch, an exact ``runs apply``, all-or-nothing
conflicts, and the user's index, HEAD, stash and branches untouched throughout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.workspace._helpers import (
    fs_ops,
    git,
    host_cli,
    make_repo,
    our_branches,
    user_state,
    worktree_config,
    worktree_paths,
)

pytestmark = pytest.mark.anyio


def _json(stdout: bytes) -> dict[str, Any]:
    return json.loads(stdout)


async def test_two_parallel_children_edit_one_file_and_the_second_apply_conflicts(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "a.txt").write_text("one\ntwo\nthree\nparent wip\n")  # uncommitted work in the very file
    config = worktree_config(
        tmp_path,
        repo,
        {
            "one": {"MOCK_FS_OPS": fs_ops(["write", "a.txt", "one\nTWO by child one\nthree\nparent wip\n"])},
            "two": {"MOCK_FS_OPS": fs_ops(["write", "a.txt", "one\nTWO by child two\nthree\nparent wip\n"])},
        },
    )
    state = tmp_path / "state"
    before = user_state(repo)
    status_before = git(repo, "status", "--porcelain")
    results: dict[str, Any] = {}

    async def run(name: str) -> None:
        done = await host_cli(
            "run", "--config", str(config), "--provider", name, "--state-dir", str(state), "--json", "go", cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr
        results[name] = _json(done.stdout)

    async with anyio.create_task_group() as group:
        group.start_soon(run, "one")
        group.start_soon(run, "two")

    assert (repo / "a.txt").read_text() == "one\ntwo\nthree\nparent wip\n"
    assert git(repo, "status", "--porcelain") == status_before
    assert worktree_paths(repo) == [str(repo)]
    one, two = results["one"], results["two"]
    for result in (one, two):
        changes = result["changes"]
        assert changes["branch"] == "subagent-host/" + result["session_id"]  # every call is a session's turn
        assert changes["files"] == [{"path": "a.txt", "status": "modified", "insertions": 1, "deletions": 1}]
        assert (changes["insertions"], changes["deletions"]) == (1, 1)
        line = f"\n[changes: 1 file, +1 -1 on branch {changes['branch']}; apply with changes_apply]"
        assert result["output"][-1] == {"type": "text", "text": line}
        assert (state / "runs" / f"{result['run_id']}.patch").stat().st_mode & 0o777 == 0o600
    assert sorted(our_branches(repo)) == sorted([one["changes"]["branch"], two["changes"]["branch"]])

    first = await host_cli("runs", "apply", one["run_id"], "--state-dir", str(state), cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    applied = "one\nTWO by child one\nthree\nparent wip\n"
    assert (repo / "a.txt").read_text() == applied
    status_applied = git(repo, "status", "--porcelain")

    second = await host_cli("runs", "apply", two["run_id"], "--state-dir", str(state), cwd=tmp_path)
    assert second.returncode == 1
    assert second.stderr.decode().splitlines()[-1] == "- a.txt"
    assert (repo / "a.txt").read_text() == applied
    assert "<<<<<<<" not in (repo / "a.txt").read_text()
    assert git(repo, "status", "--porcelain") == status_applied
    assert user_state(repo) == before


async def test_the_parents_uncommitted_and_untracked_work_is_in_the_baseline_not_in_the_patch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "a.txt").write_text("one\ntwo\nthree\nparent wip\n")
    (repo / "b.txt").write_text("bee staged\n")
    git(repo, "add", "b.txt")
    (repo / "untracked.txt").write_text("parent untracked\n")
    # The child renames the modified and the untracked file: both must exist in its worktree, as the parent has them.
    ops = fs_ops(["rename", "a.txt", "a2.txt"], ["rename", "untracked.txt", "moved.txt"], ["write", "new.txt", "n\n"])
    config = worktree_config(tmp_path, repo, {"child": {"MOCK_FS_OPS": ops}})
    state = tmp_path / "state"
    before = user_state(repo)
    done = await host_cli("run", "--config", str(config), "--state-dir", str(state), "--json", "go", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = _json(done.stdout)
    assert result["changes"]["files"] == [
        {"path": "a2.txt", "status": "renamed", "insertions": 0, "deletions": 0},
        {"path": "moved.txt", "status": "renamed", "insertions": 0, "deletions": 0},
        {"path": "new.txt", "status": "added", "insertions": 1, "deletions": 0},
    ]
    patch = (state / "runs" / f"{result['run_id']}.patch").read_text()
    assert "parent wip" not in patch and "parent untracked" not in patch and "staged" not in patch
    shown = await host_cli("runs", "show", result["run_id"], "--patch", "--state-dir", str(state), cwd=tmp_path)
    assert shown.returncode == 0 and shown.stdout.decode() == patch
    assert user_state(repo) == before
    assert (repo / "untracked.txt").read_text() == "parent untracked\n"


async def test_adds_deletes_renames_binary_and_commits_are_reproduced_exactly_by_runs_apply(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    binary = bytes(range(256)) * 4
    ops = fs_ops(
        ["write", "dir/new.txt", "added\nlines\n"],
        ["delete", "b.txt"],
        ["rename", "c.txt", "renamed.txt"],
        ["write_bytes", "blob.bin", binary.hex()],
        ["commit", "the child's own commit"],
        ["write", "a.txt", "one\nchanged after the commit\nthree\n"],
    )
    config = worktree_config(tmp_path, repo, {"child": {"MOCK_FS_OPS": ops}})
    state = tmp_path / "state"
    before = user_state(repo)
    done = await host_cli("run", "--config", str(config), "--state-dir", str(state), "--json", "go", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = _json(done.stdout)
    statuses = {item["path"]: item["status"] for item in result["changes"]["files"]}
    assert statuses == {
        "a.txt": "modified",
        "b.txt": "deleted",
        "blob.bin": "added",
        "dir/new.txt": "added",
        "renamed.txt": "renamed",
    }
    branch = result["changes"]["branch"]
    check = await host_cli("runs", "apply", result["run_id"][:8], "--check", "--state-dir", str(state), cwd=tmp_path)
    assert check.returncode == 0, check.stderr
    assert not (repo / "blob.bin").exists()
    applied = await host_cli("runs", "apply", result["run_id"], "--json", "--state-dir", str(state), cwd=tmp_path)
    assert applied.returncode == 0, applied.stderr
    assert _json(applied.stdout)["applied"] is True
    for path in git(repo, "ls-tree", "-r", "--name-only", branch).splitlines():
        expected = git(repo, "cat-file", "blob", f"{branch}:{path}").encode("utf-8", "surrogateescape")
        assert (repo / path).read_bytes() == expected, path
    assert (repo / "blob.bin").read_bytes() == binary
    assert not (repo / "b.txt").exists() and not (repo / "c.txt").exists()
    assert user_state(repo) == before
    assert worktree_paths(repo) == [str(repo)]


async def test_a_run_without_changes_leaves_no_worktree_no_branch_and_no_line(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    config = worktree_config(tmp_path, repo, {"child": {"MOCK_TEXT": "nothing to do"}})
    state = tmp_path / "state"
    done = await host_cli("run", "--config", str(config), "--state-dir", str(state), "--json", "go", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = _json(done.stdout)
    assert "changes" not in result
    assert result["output"] == [{"type": "text", "text": "nothing to do"}]
    assert our_branches(repo) == [] and worktree_paths(repo) == [str(repo)]
    assert list((state / "worktrees").glob("[!.]*")) == []
    assert not list((state / "runs").glob("*.patch"))


async def test_runs_prune_deletes_the_branches_and_patches_of_the_runs_it_removes(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    config = worktree_config(tmp_path, repo, {"child": {"MOCK_FS_OPS": fs_ops(["write", "new.txt", "n\n"])}})
    state = tmp_path / "state"
    run_ids: list[str] = []
    session_ids: list[str] = []
    for _ in range(2):
        done = await host_cli("run", "--config", str(config), "--state-dir", str(state), "--json", "go", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        run_ids.append(_json(done.stdout)["run_id"])
        session_ids.append(_json(done.stdout)["session_id"])
    assert sorted(our_branches(repo)) == sorted(f"subagent-host/{session_id}" for session_id in session_ids)
    pruned = await host_cli("runs", "prune", "--keep", "1", "--state-dir", str(state), cwd=tmp_path)
    assert pruned.returncode == 0, pruned.stderr
    older, newer = run_ids
    assert our_branches(repo) == [f"subagent-host/{session_ids[1]}"]
    assert not (state / "runs" / f"{older}.patch").exists()
    assert not (state / "runs" / f"{older}.changes.json").exists()
    assert (state / "runs" / f"{newer}.patch").is_file()
