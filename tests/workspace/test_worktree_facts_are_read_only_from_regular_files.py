"""The facts the host reads about a worktree (its ``.git`` file and ``HEAD``, git's ``gitdir`` back-link and
``locked`` reason, a run's changes file) are read only from regular files, never blocking and never through a
symlink (docs/behaviour.md#records-files-and-modes): a FIFO there reads as no fact, at once. The ``.git`` file and
``HEAD`` are in the worktree, the child's to rewrite; reclaim and a turn's end read them on the event loop, where a
FIFO used to block ``open()`` and hang the host."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from host.workspace import Changes, Workspaces, read_changes_file
from host.workspace._store import write_changes_file
from host.workspace._turn import _head_ref  # pyright: ignore[reportPrivateUsage]
from tests._state_file_helpers import fifo_at

PROMPT_S = 5.0
"""How long reading the facts may take (a FIFO's blocked reader is released only after ``RELEASE_S``)."""
RELEASE_S = 10.0


@pytest.mark.anyio
async def test_reclaim_passes_a_fifo_gitdir_or_locked_at_once(tmp_path: Path) -> None:
    state = tmp_path / "state"
    worktrees = state / "worktrees"
    admins = tmp_path / "admins"
    for name in ("fifo-gitdir", "fifo-locked"):
        (worktrees / name).mkdir(parents=True)
        (admins / name).mkdir(parents=True)
        (worktrees / name / ".git").write_text(f"gitdir: {admins / name}\n")
    (admins / "fifo-locked" / "gitdir").write_text(f"{worktrees / 'fifo-locked' / '.git'}\n")  # a true back-link
    with (
        fifo_at(admins / "fifo-gitdir" / "gitdir", release_after_s=RELEASE_S),
        fifo_at(admins / "fifo-locked" / "locked", release_after_s=RELEASE_S),
    ):
        started = time.monotonic()
        reclaimed = await Workspaces(state).reclaim()
        elapsed = time.monotonic() - started
    assert elapsed < PROMPT_S
    assert reclaimed == []
    assert (worktrees / "fifo-gitdir").exists() and (worktrees / "fifo-locked").exists()


def test_a_fifo_dot_git_in_the_worktree_reads_as_no_head(tmp_path: Path) -> None:
    worktree = tmp_path / "worktree"
    with fifo_at(worktree / ".git", release_after_s=RELEASE_S):
        started = time.monotonic()
        head = _head_ref(str(worktree))
        elapsed = time.monotonic() - started
    assert elapsed < PROMPT_S
    assert head == ""


def test_a_changes_file_that_is_a_fifo_or_a_symlink_reads_as_none(tmp_path: Path) -> None:
    runs = tmp_path / "state" / "runs"
    changes = Changes(branch="subagent-host/x", base="0" * 40, files=[], insertions=0, deletions=0)
    write_changes_file(runs, "kept", str(tmp_path), changes)
    assert read_changes_file(runs, "kept") is not None
    (runs / "linked.changes.json").symlink_to(runs / "kept.changes.json")  # the host writes no symlink there
    with fifo_at(runs / "fifo.changes.json", release_after_s=RELEASE_S):
        started = time.monotonic()
        from_fifo = read_changes_file(runs, "fifo")
        elapsed = time.monotonic() - started
    assert elapsed < PROMPT_S
    assert from_fifo is None
    assert read_changes_file(runs, "linked") is None
