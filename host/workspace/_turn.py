"""The delta of one turn: the worktree committed on its branch, and baseline tree → that tree as changes + a patch.

After the child's turn, ``add -A`` stages the worktree as it is in the worktree's own index. Then two chains run
side by side, both reading that index: ``write-tree`` → ``hash-object -t commit`` → ``update-ref --stdin`` (the
commit on the run's branch: plumbing, not ``git commit``, which refreshes the whole index again), and one
``diff-index --cached`` that prints the raw records, the numstat records and the binary patch in a single pass
(parsed once; the patch streamed to ``<run_id>.patch``, its large writes off the event loop: the file's open, a
small patch's single write and the ``.changes.json`` stay on it). The index holds exactly
the tree ``write-tree`` writes, so the diff need not wait for it. HEAD is read, and ``hash-object`` and
``update-ref`` are spawned (waiting for their input), while ``add -A`` runs, so no process start lies on the path
after ``write-tree`` (``bench/worktree.py``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import anyio

from host._exceptions import WorkspaceError
from host._files import read_regular
from host.workspace._changes import Changes, parse_changes
from host.workspace._git import MAX_GIT_FACT_BYTES, RepoLocks, commit_idents, commit_object, first_leaf, git
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
_PATCH_BATCH_BYTES: Final = 1024 * 1024
"""How much of the patch is gathered before one write of it in a worker thread (and bounds what is held)."""
_INLINE_PATCH_BYTES: Final = 256 * 1024
"""A whole patch up to this size is written from the event loop, in one write at the end (no thread hop)."""


class _DeltaSink:
    """Splits one ``_DIFF`` output as it arrives: the records before the first empty field are kept (bounded), the
    patch after it goes to ``<run_id>.patch``, created only when there is one. The patch's disk writes stay off the
    event loop: its chunks are gathered and each ``_PATCH_BATCH_BYTES`` handed to a worker thread in one write (git
    waits on its pipe meanwhile, so memory stays bounded); a patch whose whole fits in ``_INLINE_PATCH_BYTES`` is
    written inline by ``finish`` (one small write to the page cache costs less than the thread hop). It never
    raises while git runs (it runs in git's reader task); a failure is kept on ``error`` and the rest of the output
    is dropped."""

    def __init__(self, runs_dir: Path, run_id: str) -> None:
        self._runs_dir = runs_dir
        self._run_id = run_id
        self.records = bytearray()
        self.error: WorkspaceError | None = None
        self._in_patch = False
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._fd: int | None = None
        self.opened = False
        """Whether ``<run_id>.patch`` was created (or truncated) for this output."""

    async def __call__(self, chunk: bytes) -> None:
        if self.error is not None:
            return
        if self._in_patch:
            self._gather(chunk)
        else:
            start = max(0, len(self.records) - 1)
            self.records += chunk
            end = self.records.find(b"\0\0", start)
            if end < 0:
                if len(self.records) > _RECORDS_CAP_BYTES:
                    self.error = WorkspaceError(_RECORDS_TOO_LARGE, "git-failed")
                return
            self._in_patch = True
            self._gather(bytes(self.records[end + 2 :]))
            del self.records[end + 1 :]
        if self._pending_bytes >= _PATCH_BATCH_BYTES:
            await self._write_pending(in_thread=True)

    def _gather(self, chunk: bytes) -> None:
        if chunk:
            self._pending.append(chunk)
            self._pending_bytes += len(chunk)

    async def _write_pending(self, *, in_thread: bool) -> None:
        batch = b"".join(self._pending)
        self._pending.clear()
        self._pending_bytes = 0
        try:
            if self._fd is None:
                self._fd = open_patch_file(self._runs_dir, self._run_id)
                self.opened = True
            if in_thread:
                await anyio.to_thread.run_sync(_write_all, self._fd, batch)
            else:
                _write_all(self._fd, batch)
        except OSError as raw:
            error = WorkspaceError(_PATCH_WRITE_FAILED, "git-failed")
            error.__cause__ = raw
            self.error = error

    async def finish(self) -> None:
        """Write what is still gathered once git has printed everything (the patch file is created here when the
        output had a patch and none was written yet).

        Raises:
            WorkspaceError: a write failed (now or while git ran), or the records were over their bound.
        """
        if self.error is None and self._in_patch:
            await self._write_pending(in_thread=self.opened or self._pending_bytes > _INLINE_PATCH_BYTES)
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        """Close the patch file (if one was opened)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


async def _side_by_side(*calls: Callable[[], Awaitable[object]]) -> None:
    """Await ``calls`` concurrently. The first failure cancels the others and is raised as itself (never wrapped in
    an exception group: callers catch ``WorkspaceError``)."""
    errors: list[Exception] = []
    async with anyio.create_task_group() as group:

        async def one(call: Callable[[], Awaitable[object]]) -> None:
            try:
                await call()
            except Exception as error:  # a cancellation is not an Exception: it propagates
                errors.append(first_leaf(error))
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
    steps = _Steps()
    message = _TURN_MESSAGE.format(run_id=run_id)
    sink = _DeltaSink(runs_dir, run_id)
    try:
        await _side_by_side(  # in this order: add -A is spawned first, write-tree right after it
            lambda: _stage(cwd, steps),
            lambda: _read_head(cwd, steps),
            lambda: _write_commit(cwd, steps, message),
            lambda: _move_head(cwd, steps),
            lambda: _diff(cwd, workspace.baseline.tree, steps, sink),
        )
        sink.close()
        await _keep_branch_at_head(workspace, locks)
    except BaseException:
        sink.close()
        if sink.opened:  # no partial patch stays behind
            with contextlib.suppress(OSError):
                remove_run_files(runs_dir, run_id)
        raise
    if not sink.records:  # the index is the baseline tree: no diff
        workspace.changed = False
        return None
    changes = parse_changes(bytes(sink.records), branch=workspace.branch, base_commit=workspace.baseline.commit)
    workspace.changed = bool(changes.files)
    if not workspace.changed:
        remove_run_files(runs_dir, run_id)  # nothing, or only what a diff does not show (never in practice)
        return None
    write_changes_file(runs_dir, run_id, workspace.repo.toplevel, changes)
    return changes


@dataclass(slots=True)
class _Steps:
    """What the turn's concurrent git steps hand each other."""

    staged: anyio.Event = field(default_factory=anyio.Event)
    """``add -A`` has written the index."""
    head_known: anyio.Event = field(default_factory=anyio.Event)
    tree_known: anyio.Event = field(default_factory=anyio.Event)
    commit_known: anyio.Event = field(default_factory=anyio.Event)
    diffed: anyio.Event = field(default_factory=anyio.Event)
    """The diff succeeded: it read every blob that differs from the baseline, so the tree names no missing object."""
    skip_commit: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    """Cancelled when the tree is HEAD's: the waiting ``hash-object`` is killed before any input."""
    skip_ref: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    head_commit: str | None = None
    """HEAD's commit before the turn is committed (``None``: a branch with no commit yet)."""
    head_tree: str | None = None
    tree: str = ""
    commit: str = ""


async def _stage(cwd: str, steps: _Steps) -> None:
    """``add -A``, then at once ``write-tree --missing-ok`` (only the subtrees ``add -A`` invalidated are rewritten,
    and no blob is looked up again: ``add -A`` has just written them); a tree that is HEAD's skips the commit."""
    await git(["add", "-A", "--", "."], cwd=cwd)
    steps.staged.set()
    tree = (await git(["write-tree", "--missing-ok"], cwd=cwd)).stdout.decode("ascii").strip()
    await steps.head_known.wait()
    if tree == steps.head_tree:  # the child committed everything itself, or changed nothing
        steps.skip_commit.cancel()
        steps.skip_ref.cancel()
    else:
        steps.tree = tree
        steps.tree_known.set()


async def _read_head(cwd: str, steps: _Steps) -> None:
    found = await git(["rev-parse", "HEAD", "HEAD^{tree}"], cwd=cwd, check=False)
    # A failure is HEAD naming a branch with no commit yet (the child ran checkout --orphan); were it anything else,
    # HEAD's update fails: it then requires the branch to have no commit.
    if found.returncode == 0:
        steps.head_commit, steps.head_tree = found.stdout.decode("ascii").split()
    steps.head_known.set()


async def _write_commit(cwd: str, steps: _Steps, message: str) -> None:
    """``hash-object -t commit``, spawned at once and given the commit's text when the tree is known."""

    async def text() -> bytes:
        idents = await commit_idents(cwd)  # None unless a date is set; else git var runs beside add -A
        await steps.tree_known.wait()
        return commit_object(steps.tree, steps.head_commit, message, idents)

    with steps.skip_commit:
        written = await git(["hash-object", "-t", "commit", "-w", "--stdin"], cwd=cwd, stdin=text)
        steps.commit = written.stdout.decode("ascii").strip()
        steps.commit_known.set()


async def _move_head(cwd: str, steps: _Steps) -> None:
    """``update-ref --stdin``, spawned at once and told ``update HEAD <new> <old>`` when the commit is written and
    the diff succeeded. ``write-tree --missing-ok`` trusts the index, and the child can forge an entry ``add -A``
    keeps (skip-worktree, a bogus id): the diff reads it and fails, so no ref ever names such a tree."""

    async def line() -> bytes:
        await steps.commit_known.wait()
        await steps.diffed.wait()
        old = steps.head_commit or "0" * len(steps.commit)  # all zeros: the branch must still have no commit
        return f"update HEAD {steps.commit} {old}\n".encode("ascii")

    with steps.skip_ref:
        await git(["update-ref", "-m", "subagent-host turn", "--stdin"], cwd=cwd, stdin=line)


async def _diff(cwd: str, base_tree: str, steps: _Steps, sink: _DeltaSink) -> None:
    await steps.staged.wait()
    await git([*_DIFF, base_tree], cwd=cwd, on_stdout=sink)
    await sink.finish()  # raises a write failure: the branch's update, waiting for diffed, is then cancelled
    steps.diffed.set()


async def _keep_branch_at_head(workspace: Workspace, locks: RepoLocks) -> None:
    """Move the run's branch to HEAD's commit when the child moved HEAD off it."""
    cwd = workspace.path
    if _head_ref(cwd) != "ref: refs/heads/" + workspace.branch:
        final = (await git(["rev-parse", "HEAD"], cwd=cwd)).stdout.decode("ascii").strip()
        async with locks.hold(workspace.repo.common_dir):
            await git(["update-ref", "-m", "subagent-host turn", "refs/heads/" + workspace.branch, final], cwd=cwd)


def _head_ref(worktree: str) -> str:
    """The worktree's HEAD file as it is (``ref: refs/heads/<branch>``, or a commit id when detached)."""
    try:
        dotgit = read_regular(os.path.join(worktree, ".git"), MAX_GIT_FACT_BYTES)
        admin = dotgit.decode().removeprefix("gitdir:").strip()
        return read_regular(os.path.join(worktree, admin, "HEAD"), MAX_GIT_FACT_BYTES).decode().strip()
    except (OSError, UnicodeDecodeError):  # the child may have made .git anything: a FIFO, a symlink, a huge file
        return ""
