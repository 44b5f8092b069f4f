"""The delta of one turn: the worktree committed on its branch, and baseline tree → that tree as changes + a patch.

After the child's turn, ``add -A`` stages the worktree as it is in the worktree's own index (HEAD is read beside
it). Then two chains run side by side, both reading that index: ``write-tree`` → ``hash-object -t commit`` →
``update-ref --stdin`` (the commit on the run's branch; the last two spawned ahead, waiting for their input), and
one ``diff-index --cached`` that prints the raw records, the numstat records and the binary patch in a single pass
(parsed once; the patch streamed to ``<run_id>.patch``). The index holds exactly the tree ``write-tree`` writes, so
the diff need not wait for it (``bench/worktree.py``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, cast

import anyio

from host._exceptions import WorkspaceError
from host.workspace._changes import Changes, parse_changes
from host.workspace._git import RepoLocks, commit_object, git
from host.workspace._store import open_patch_file, remove_run_files, write_changes_file
from host.workspace._worktree import Workspace

__all__ = ["record_turn"]

_TURN_MESSAGE: Final = "subagent-host: changes of run {run_id}"
_DIFF: Final = ("diff-index", "--cached", "-z", "-M", "--raw", "--numstat", "-p", "--binary", "--full-index")
"""One diff, three views: raw records (status), numstat records (counts), then an empty field and the patch."""
_RECORDS_CAP_BYTES: Final = 64 * 1024 * 1024
"""Bounds the raw + numstat records kept in memory (a few hundred bytes per changed file)."""
_RECORDS_TOO_LARGE: Final = "the turn changed more files than the host records"
_PATCH_WRITE_FAILED: Final = "the turn's patch could not be written"


class _DeltaSink:
    """Splits one ``_DIFF`` output as it arrives: the records before the first empty field are kept (bounded), the
    patch after it goes to ``<run_id>.patch``, created only when there is one. It never raises (it runs in git's
    reader task); a failure is kept on ``error`` and the rest of the output is dropped."""

    def __init__(self, runs_dir: Path, run_id: str) -> None:
        self._runs_dir = runs_dir
        self._run_id = run_id
        self.records = bytearray()
        self.error: WorkspaceError | None = None
        self._fd: int | None = None
        self.opened = False
        """Whether ``<run_id>.patch`` was created (or truncated) for this output."""

    def __call__(self, chunk: bytes) -> None:
        if self.error is not None:
            return
        try:
            if self._fd is not None:
                _write_all(self._fd, chunk)
                return
            start = max(0, len(self.records) - 1)
            self.records += chunk
            end = self.records.find(b"\0\0", start)
            if end < 0:
                if len(self.records) > _RECORDS_CAP_BYTES:
                    self.error = WorkspaceError(_RECORDS_TOO_LARGE, "git-failed")
                return
            patch = bytes(self.records[end + 2 :])
            del self.records[end + 1 :]
            self._fd = open_patch_file(self._runs_dir, self._run_id)
            self.opened = True
            _write_all(self._fd, patch)
        except OSError as raw:
            error = WorkspaceError(_PATCH_WRITE_FAILED, "git-failed")
            error.__cause__ = raw
            self.error = error

    def close(self) -> None:
        """Close the patch file (if one was opened)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _first_leaf(error: Exception) -> Exception:
    """The first plain exception in ``error`` (git()'s own reader tasks may wrap one in a group)."""
    while isinstance(error, ExceptionGroup):
        leaves = cast("tuple[Exception, ...]", error.exceptions)  # pyright: ignore[reportUnknownMemberType]
        if not leaves:
            break
        error = leaves[0]
    return cast(Exception, error)


async def _side_by_side(*calls: Callable[[], Awaitable[object]]) -> None:
    """Await ``calls`` concurrently. The first failure cancels the others and is raised as itself (never wrapped in
    an exception group: callers catch ``WorkspaceError``)."""
    errors: list[Exception] = []
    async with anyio.create_task_group() as group:

        async def one(call: Callable[[], Awaitable[object]]) -> None:
            try:
                await call()
            except Exception as error:  # a cancellation is not an Exception: it propagates
                errors.append(_first_leaf(error))
                group.cancel_scope.cancel()

        for call in calls:
            group.start_soon(one, call)
    if errors:
        raise errors[0]


async def record_turn(workspace: Workspace, run_id: str, runs_dir: Path, locks: RepoLocks) -> Changes | None:
    """Commit the worktree as it is now on the run's branch, and diff the baseline tree → that tree.

    With changes: ``<runs_dir>/<run_id>.patch`` (binary, 0600) and ``<run_id>.changes.json`` are written and the
    ``Changes`` returned; without: ``None`` (and no file). Changes the child committed itself are included (the tree
    is the worktree's, whatever its HEAD is); the branch is moved to the final commit.

    Raises:
        WorkspaceError: git failed or the patch could not be written (no partial patch is left).
    """
    cwd = workspace.path
    head: list[str] = []

    async def read_head() -> None:
        head.extend((await git(["rev-parse", "HEAD", "HEAD^{tree}"], cwd=cwd)).stdout.decode("ascii").split())

    await _side_by_side(read_head, lambda: git(["add", "-A", "--", "."], cwd=cwd))
    sink = _DeltaSink(runs_dir, run_id)
    try:
        await _side_by_side(
            lambda: _commit_turn(workspace, _Head(commit=head[0], tree=head[1]), run_id, locks),
            lambda: git([*_DIFF, workspace.baseline.tree], cwd=cwd, on_stdout=sink),
        )
        if sink.error is not None:
            raise sink.error
    except BaseException:
        sink.close()
        if sink.opened:  # no partial patch stays behind
            with contextlib.suppress(OSError):
                remove_run_files(runs_dir, run_id)
        raise
    sink.close()
    if not sink.records:  # the index is the baseline tree: no diff, only the branch settled
        workspace.changed = False
        return None
    changes = parse_changes(bytes(sink.records), branch=workspace.branch, base_commit=workspace.baseline.commit)
    workspace.changed = bool(changes.files)
    if not workspace.changed:
        remove_run_files(runs_dir, run_id)  # nothing, or only what a diff does not show (never in practice)
        return None
    write_changes_file(runs_dir, run_id, workspace.repo.toplevel, changes)
    return changes


@dataclass(frozen=True, slots=True)
class _Head:
    """The worktree's HEAD before the turn is committed."""

    commit: str
    tree: str


async def _commit_turn(workspace: Workspace, head: _Head, run_id: str, locks: RepoLocks) -> None:
    """Commit the staged tree on the worktree's HEAD when it differs from HEAD's, and keep the run's branch at the
    final commit.

    Plumbing, not ``git commit`` (which re-reads and refreshes the whole index, as costly as ``add -A``):
    ``write-tree --missing-ok`` rewrites only the subtrees ``add -A`` invalidated, without looking every blob up
    again (``add -A`` has just written them); ``hash-object -t commit`` and ``update-ref --stdin`` are spawned
    beside it and wait for their input, so no process start lies on the path after it (bench/worktree.py). When the
    tree is HEAD's (the child committed everything itself, or changed nothing) both are killed before any input:
    nothing is written."""
    cwd = workspace.path
    tree_known, commit_known = anyio.Event(), anyio.Event()
    ids: dict[str, str] = {}
    skip_commit, skip_ref = anyio.CancelScope(), anyio.CancelScope()

    async def commit_text() -> bytes:
        await tree_known.wait()
        return commit_object(ids["tree"], head.commit, _TURN_MESSAGE.format(run_id=run_id))

    async def ref_update() -> bytes:
        await commit_known.wait()
        return f"update HEAD {ids['commit']} {head.commit}\n".encode("ascii")

    async def write_commit() -> None:
        with skip_commit:
            written = await git(["hash-object", "-t", "commit", "-w", "--stdin"], cwd=cwd, stdin=commit_text)
            ids["commit"] = written.stdout.decode("ascii").strip()
            commit_known.set()

    async def move_head() -> None:
        with skip_ref:
            await git(["update-ref", "-m", "subagent-host turn", "--stdin"], cwd=cwd, stdin=ref_update)

    async def write_tree() -> None:
        tree = (await git(["write-tree", "--missing-ok"], cwd=cwd)).stdout.decode("ascii").strip()
        if tree == head.tree:
            skip_commit.cancel()
            skip_ref.cancel()
        else:
            ids["tree"] = tree
            tree_known.set()

    await _side_by_side(write_tree, write_commit, move_head)
    if _head_ref(cwd) != "ref: refs/heads/" + workspace.branch:  # the child moved HEAD off the run's branch
        final = (await git(["rev-parse", "HEAD"], cwd=cwd)).stdout.decode("ascii").strip()
        async with locks.hold(workspace.repo.common_dir):
            await git(["update-ref", "-m", "subagent-host turn", "refs/heads/" + workspace.branch, final], cwd=cwd)


def _head_ref(worktree: str) -> str:
    """The worktree's HEAD file as it is (``ref: refs/heads/<branch>``, or a commit id when detached)."""
    try:
        with open(os.path.join(worktree, ".git"), encoding="utf-8") as dotgit:
            admin = dotgit.read().removeprefix("gitdir:").strip()
        with open(os.path.join(worktree, admin, "HEAD"), encoding="utf-8") as head:
            return head.read().strip()
    except OSError:
        return ""
