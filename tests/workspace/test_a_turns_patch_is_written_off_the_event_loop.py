"""A turn's patch reaches the disk without blocking the event loop: a large (binary) patch is written by worker
threads in batches, whole; a small one in one write at the end. A patch that cannot be written fails the turn at
once with a ``WorkspaceError``: no ref moves and no partial patch is left. ``os.write`` is observed (which thread
wrote how much to the patch file), never replaced."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import anyio
import pytest

from host._exceptions import WorkspaceError
from host.workspace import Workspaces
from tests.workspace._helpers import git, make_repo

pytestmark = pytest.mark.anyio

_TIMEOUT_S = 60


def _observe_patch_writes(monkeypatch: pytest.MonkeyPatch, patch: Path) -> list[tuple[int, int]]:
    """(thread id, bytes written) of every ``os.write`` to ``patch`` from now on."""
    seen: list[tuple[int, int]] = []
    real_write = os.write

    def observed(fd: int, data: bytes | memoryview) -> int:
        written = real_write(fd, data)
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            target = ""
        if target == str(patch):
            seen.append((threading.get_ident(), written))
        return written

    monkeypatch.setattr(os, "write", observed)
    return seen


async def _record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes
) -> tuple[Path, Path, list[tuple[int, int]]]:
    """One turn that added ``blob.bin`` with ``content``: the repository, the patch, and the writes to it."""
    repo = make_repo(tmp_path / "repo")
    workspaces = Workspaces(tmp_path / "state")
    patch = workspaces.runs_dir / "patched-run.patch"
    with anyio.fail_after(_TIMEOUT_S):
        workspace = await workspaces.acquire(str(repo), "patched")
        (Path(workspace.path) / "blob.bin").write_bytes(content)
        writes = _observe_patch_writes(monkeypatch, patch)
        assert await workspaces.after_turn(workspace, "patched-run") is not None
        monkeypatch.undo()
        scratch = tmp_path / "scratch"
        git(repo, "worktree", "add", "-q", "--detach", str(scratch), workspace.baseline.commit)
        git(scratch, "apply", "--index", str(patch))  # the patch is whole
        assert (scratch / "blob.bin").read_bytes() == content
        git(repo, "worktree", "remove", "--force", str(scratch))
        await workspaces.release(workspace)
    return repo, patch, writes


async def test_a_large_patch_is_written_by_worker_threads_in_batches_and_a_small_one_in_one_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, patch, writes = await _record(tmp_path / "large", monkeypatch, os.urandom(6 * 2**20))
    loop_thread = threading.get_ident()
    assert sum(size for _, size in writes) == patch.stat().st_size > 6 * 2**20
    assert all(thread != loop_thread for thread, _ in writes), "a patch write blocked the event loop"
    assert len(writes) < 16  # batches, not one write per pipe chunk
    _, patch, writes = await _record(tmp_path / "small", monkeypatch, b"small\n" * 100)
    assert writes == [(loop_thread, patch.stat().st_size)]  # one write, no thread hop for a few bytes


async def test_a_patch_that_cannot_be_written_fails_the_turn_at_once_and_moves_no_ref(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    workspaces = Workspaces(tmp_path / "state")
    workspaces.runs_dir.parent.mkdir(parents=True)
    workspaces.runs_dir.write_text("not a directory")  # no patch file can be created under it
    with anyio.fail_after(_TIMEOUT_S):
        workspace = await workspaces.acquire(str(repo), "unwritable")
        (Path(workspace.path) / "a.txt").write_text("changed\n")
        before = git(repo, "rev-parse", workspace.branch).strip()
        with pytest.raises(WorkspaceError) as raised:
            await workspaces.after_turn(workspace, "unwritable-run")
        assert raised.value.kind == "git-failed"
        assert git(repo, "rev-parse", workspace.branch).strip() == before
        await workspaces.release(workspace)
