"""A worktree run that cannot start says why, with a hint, and leaves nothing behind: no worktree, no branch, no
patch; and an entry's ``setup`` runs in the worktree (a failure is a closed ``workspace`` / ``setup-failed``
diagnostic, its output in the run's stderr record), after ``.worktreeinclude`` copied the ignored files it names."""

from __future__ import annotations

import json
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli._helpers import cli_env
from tests.workspace._helpers import fs_ops, git, host_cli, make_repo, our_branches, worktree_config, worktree_paths

pytestmark = pytest.mark.anyio


def _plain_directory(path: Path) -> Path:
    path.mkdir()
    return path


def _bare(path: Path) -> Path:
    git(path.parent, "init", "-q", "--bare", path.name)
    return path


def _mid_merge(path: Path) -> Path:
    repo = make_repo(path)
    (repo / ".git" / "MERGE_HEAD").write_text(git(repo, "rev-parse", "HEAD"))
    return repo


def _mid_rebase(path: Path) -> Path:
    repo = make_repo(path)
    (repo / ".git" / "rebase-merge").mkdir()
    return repo


def _too_large(path: Path) -> Path:
    repo = make_repo(path)
    (repo / "big.untracked").write_bytes(b"x" * 5000)
    return repo


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (_plain_directory, 'workspace = "worktree" needs a git repository: {path} is not inside one'),
        (_bare, 'workspace = "worktree" needs a working tree: {path} is a bare repository'),
        (_mid_merge, 'workspace = "worktree" cannot start while a merge is in progress in {path}'),
        (_mid_rebase, 'workspace = "worktree" cannot start while a rebase is in progress in {path}'),
        (_too_large, "the untracked files in {path} hold 5000 bytes, over max_baseline_bytes (1000)"),
    ],
    ids=["not-a-repository", "bare", "mid-merge", "mid-rebase", "baseline-too-large"],
)
async def test_a_worktree_run_that_cannot_start_says_why_and_leaves_nothing(
    tmp_path: Path, make: Callable[[Path], Path], expected: str
) -> None:
    place = make(tmp_path / "place")
    config = worktree_config(tmp_path, place, {"child": {}}, max_baseline_bytes=1000)
    state = tmp_path / "state"
    done = await host_cli("run", "--config", str(config), "--state-dir", str(state), "--json", "go", cwd=tmp_path)
    assert done.returncode == 1
    error = json.loads(done.stdout)["error"]
    assert expected.format(path=place) in error
    assert list((state / "worktrees").glob("[!.]*")) == [] if (state / "worktrees").exists() else True
    assert not list(state.glob("runs/*.patch"))
    if (place / ".git").is_dir():
        assert our_branches(place) == [] and worktree_paths(place) == [str(place)]


def _fake_git(directory: Path, version: str) -> None:
    directory.mkdir()
    script = directory / "git"
    script.write_text(f"#!{sys.executable}\nprint('git version {version}')\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (None, 'workspace = "worktree" needs git, and no git program was found on PATH'),
        ("2.20.1", 'workspace = "worktree" needs git 2.36 or newer; found git version 2.20.1'),
    ],
    ids=["missing", "too-old"],
)
async def test_git_missing_or_too_old_is_a_startup_error(tmp_path: Path, version: str | None, expected: str) -> None:
    repo = make_repo(tmp_path / "repo")
    config = worktree_config(tmp_path, repo, {"child": {}})
    bin_dir = tmp_path / "bin"
    if version is None:
        bin_dir.mkdir()
    else:
        _fake_git(bin_dir, version)
    env = {**cli_env(), "PATH": str(bin_dir)}
    done = await host_cli(
        "run", "--config", str(config), "--state-dir", str(tmp_path / "state"), "--json", "go", cwd=tmp_path, env=env
    )
    assert done.returncode == 1
    assert expected in json.loads(done.stdout)["error"]
    assert our_branches(repo) == [] and worktree_paths(repo) == [str(repo)]


async def test_a_failing_setup_ends_the_run_with_a_closed_diagnostic_and_its_output_in_the_stderr_record(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    setup = [sys.executable, "-c", "import sys; print('setup says hello'); sys.exit(3)"]
    config = worktree_config(tmp_path, repo, {"child": {}}, setup=setup)
    state = tmp_path / "state"
    done = await host_cli("run", "--config", str(config), "--state-dir", str(state), "--json", "go", cwd=tmp_path)
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["stop_reason"] == "error"
    assert result["diagnostic"] == "Subagent failure (provider: ACP; stage: workspace; category: setup-failed)"
    stderr = await host_cli("runs", "show", result["run_id"], "--stderr", "--state-dir", str(state), cwd=tmp_path)
    assert "setup says hello" in stderr.stdout.decode()
    assert our_branches(repo) == [] and worktree_paths(repo) == [str(repo)]


async def test_setup_and_worktreeinclude_prepare_the_worktree_before_the_child(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / ".env").write_text("SECRET=local\n")  # ignored by .gitignore, named by .worktreeinclude
    (repo / ".worktreeinclude").write_text(".env\n")
    setup = [sys.executable, "-c", "import os; os.rename('.env', 'env-from-setup.txt'); print('setup ran')"]
    # The child renames what setup made: it only exists if .env was copied and setup ran in the worktree.
    ops = fs_ops(["rename", "env-from-setup.txt", "seen-by-child.txt"])
    config = worktree_config(tmp_path, repo, {"child": {"MOCK_FS_OPS": ops}}, setup=setup)
    state = tmp_path / "state"
    done = await host_cli("run", "--config", str(config), "--state-dir", str(state), "--json", "go", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    files = json.loads(done.stdout)["changes"]["files"]
    assert files == [{"path": "seen-by-child.txt", "status": "added", "insertions": 1, "deletions": 0}]
    assert (repo / ".env").read_text() == "SECRET=local\n"
