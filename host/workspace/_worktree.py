"""One worktree's life: create (locked, ``.worktreeinclude``), setup, the delta after a turn, remove, reclaim.

A worktree lives at ``<state>/worktrees/<owner>`` on branch ``subagent-host/<owner>``, outside the parent's
repository, locked with a reason naming the host's pid, its start time and the baseline commit, so a later host can
tell a dead owner from a live one and salvage the delta without any other file.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import anyio
import psutil

from host.process import enrol
from host.workspace._baseline import Baseline, Repository
from host.workspace._changes import Changes, read_changes
from host.workspace._git import RepoLocks, git
from host.workspace._store import open_patch_file, remove_run_files, write_changes_file

__all__ = [
    "BRANCH_PREFIX",
    "SETUP_OUTPUT_CAP_BYTES",
    "SetupOutcome",
    "Workspace",
    "branch_of",
    "copy_included",
    "create_worktree",
    "dead_lock_reason",
    "lock_reason",
    "record_turn",
    "remove_worktree",
    "run_setup",
]

BRANCH_PREFIX: Final = "subagent-host/"
"""Every branch the host makes is ``subagent-host/<owner>``."""
SETUP_OUTPUT_CAP_BYTES: Final = 64 * 1024
"""How many of the newest bytes of a setup command's output are kept for the run's stderr record."""
_OWNER: Final = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_REASON: Final = re.compile(r"^subagent-host pid=(\d+) started=([0-9.]+) base=([0-9a-f]{40,64})$")
_BAD_OWNER: Final = "workspace owner ids are 1-128 characters of [A-Za-z0-9_.-], not starting with . or -"
_TURN_MESSAGE: Final = "subagent-host: changes of run {run_id}"
_SETUP_SIGKILL_WAIT_S: Final = 5.0


@dataclass(slots=True)
class Workspace:
    """A live worktree and what it was made from."""

    owner: str
    repo: Repository
    path: str
    """The worktree's top directory."""
    branch: str
    baseline: Baseline
    changed: bool = False
    """Whether the last recorded turn left changes (the branch then outlives the worktree)."""
    setup_output: bytes = field(default=b"")
    """The tail of the setup command's output (for the run's stderr record)."""

    @property
    def cwd(self) -> str:
        """Where the child starts: the same subdirectory of the worktree as the parent's cwd in its tree."""
        return os.path.normpath(os.path.join(self.path, self.repo.prefix)) if self.repo.prefix else self.path


@dataclass(frozen=True, slots=True)
class SetupOutcome:
    """What the entry's ``setup`` command did."""

    ok: bool
    output: bytes


def branch_of(owner: str) -> str:
    """The host-built branch name of an owner, after checking the owner id."""
    if not _OWNER.match(owner):
        raise ValueError(_BAD_OWNER)
    return BRANCH_PREFIX + owner


def _own_start_time() -> float:
    return psutil.Process().create_time()


def lock_reason(baseline: Baseline) -> str:
    """``subagent-host pid=<pid> started=<process start time> base=<baseline commit>``."""
    return f"subagent-host pid={os.getpid()} started={_own_start_time():.2f} base={baseline.commit}"


def dead_lock_reason(reason: str) -> str | None:
    """The baseline commit of a lock reason whose host process is gone, else ``None`` (alive, or not ours)."""
    match = _REASON.match(reason.strip())
    if match is None:
        return None
    pid, started, base = int(match.group(1)), float(match.group(2)), match.group(3)
    try:
        alive = abs(psutil.Process(pid).create_time() - started) < 0.02
    except psutil.Error:
        alive = False
    return None if alive else base


async def create_worktree(repo: Repository, baseline: Baseline, owner: str, path: Path, locks: RepoLocks) -> Workspace:
    """``git worktree add --lock`` on a new branch ``subagent-host/<owner>`` at the baseline, then copy the ignored
    files ``.worktreeinclude`` names. On any failure nothing is left behind."""
    branch = branch_of(owner)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    workspace = Workspace(owner=owner, repo=repo, path=str(path), branch=branch, baseline=baseline)
    try:
        async with locks.hold(repo.common_dir):
            await git(
                [
                    "worktree",
                    "add",
                    "--lock",
                    "--reason",
                    lock_reason(baseline),
                    "-b",
                    branch,
                    str(path),
                    baseline.commit,
                ],
                cwd=repo.toplevel,
            )
        await copy_included(repo.toplevel, str(path))
    except BaseException:
        with anyio.CancelScope(shield=True):
            await remove_worktree(workspace, locks, keep_branch=False)
        raise
    return workspace


async def copy_included(source: str, target: str) -> None:
    """Copy into ``target`` the ignored files of ``source`` that its ``.worktreeinclude`` names."""
    include = _include_file(source)
    if include is None:
        return
    named = await git(["ls-files", "-z", "--others", "--ignored", f"--exclude-from={include}"], cwd=source)
    if not named.stdout:
        return
    ignored = await git(["check-ignore", "-z", "--stdin"], cwd=source, stdin=named.stdout, check=False)
    paths = [raw for raw in ignored.stdout.split(b"\0") if raw]
    if paths:
        await anyio.to_thread.run_sync(_copy_files, os.fsencode(source), os.fsencode(target), paths)


def _include_file(source: str) -> str | None:
    include = os.path.join(source, ".worktreeinclude")
    return include if os.path.isfile(include) else None


def _remove_tree(path: str) -> None:
    if os.path.lexists(path):
        shutil.rmtree(path, ignore_errors=True)


def _copy_files(source: bytes, target: bytes, paths: list[bytes]) -> None:
    for relative in paths:
        destination = os.path.join(target, relative)
        if os.path.lexists(destination):
            continue
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        with contextlib.suppress(OSError):
            shutil.copy2(os.path.join(source, relative), destination, follow_symlinks=False)


async def run_setup(argv: Sequence[str], *, cwd: str, env: Mapping[str, str], timeout_s: float) -> SetupOutcome:
    """Run the entry's ``setup`` argv in ``cwd`` (own process group), bounded by ``timeout_s``; keep the tail of
    its merged output. A spawn failure, a non-zero exit or the timeout is ``ok=False``. The setup process is
    enrolled with the keeper like every child, so it (and whatever it left, ``setsid()``-ed or not) ends with the
    host even when the host is SIGKILLed during setup."""
    ticket = enrol(env)
    try:
        process = await anyio.open_process(
            list(argv),
            cwd=cwd,
            env=ticket.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except OSError as exc:
        ticket.retire(0)
        return SetupOutcome(False, f"setup could not start: {exc.strerror or type(exc).__name__}\n".encode())
    except BaseException:
        ticket.retire(0)
        raise
    ticket.track(process.pid)  # no await since the spawn: the group is the keeper's before anything can cancel
    tail = bytearray()
    ok = False
    try:
        with anyio.move_on_after(timeout_s) as scope:
            assert process.stdout is not None
            async for chunk in process.stdout:
                tail += chunk
                del tail[:-SETUP_OUTPUT_CAP_BYTES]
            ok = await process.wait() == 0
        if scope.cancelled_caught:
            tail += f"\nsetup did not finish within {timeout_s:g} s\n".encode()
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            with anyio.move_on_after(_SETUP_SIGKILL_WAIT_S, shield=True):
                await process.wait()
        with anyio.CancelScope(shield=True):
            await process.aclose()
        ticket.retire(0)  # what setup left behind (daemons, setsid()-ed helpers) is the keeper's to end
    return SetupOutcome(ok, bytes(tail[-SETUP_OUTPUT_CAP_BYTES:]))


async def record_turn(workspace: Workspace, run_id: str, runs_dir: Path, locks: RepoLocks) -> Changes | None:
    """Commit the worktree as it is now on the run's branch, then diff baseline tree → that tree.

    With changes: ``<runs_dir>/<run_id>.patch`` (binary, 0600) and ``<run_id>.changes.json`` are written and the
    ``Changes`` returned; without: ``None``. Changes the child committed itself are included (the tree is the
    worktree's, whatever its HEAD is); the branch is moved to the final commit.
    """
    cwd = workspace.path
    await git(["add", "-A", "--", "."], cwd=cwd)
    # Plumbing, not `git commit`: commit re-reads and refreshes the whole index (as costly as `add -A` on a large
    # tree, bench/worktree.py); write-tree + commit-tree + update-ref write only the new objects and the ref.
    tree = (await git(["write-tree"], cwd=cwd)).stdout.decode("ascii").strip()
    base_tree = workspace.baseline.tree
    if tree == base_tree:  # nothing differs from the baseline: no diff to read, only the branch to settle
        await _commit_turn(workspace, tree, run_id, locks)
        workspace.changed = False
        return None
    # The written tree is the worktree as it is, so both diffs read baseline tree → tree and need not wait for the
    # commit: the three git chains run side by side (bench/worktree.py: the delta's wall time).
    found: list[Changes] = []

    async def read_counts() -> None:
        found.append(
            await read_changes(cwd, base_tree, tree, branch=workspace.branch, base_commit=workspace.baseline.commit)
        )

    fd = open_patch_file(runs_dir, run_id)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_commit_turn, workspace, tree, run_id, locks)
            group.start_soon(read_counts)
            group.start_soon(_write_patch, cwd, base_tree, tree, fd)
    finally:
        os.close(fd)
    changes = found[0]
    workspace.changed = bool(changes.files)
    if not workspace.changed:  # a tree that differs only in what a diff does not show (never in practice)
        remove_run_files(runs_dir, run_id)
        return None
    write_changes_file(runs_dir, run_id, workspace.repo.toplevel, changes)
    return changes


async def _commit_turn(workspace: Workspace, tree: str, run_id: str, locks: RepoLocks) -> None:
    """Commit ``tree`` on the worktree's HEAD when it differs, and keep the run's branch at the final commit."""
    cwd = workspace.path
    head_tree = (await git(["rev-parse", "HEAD^{tree}"], cwd=cwd)).stdout.decode("ascii").strip()
    if tree != head_tree:  # else the child committed everything itself, or changed nothing
        message = _TURN_MESSAGE.format(run_id=run_id)
        commit = (await git(["commit-tree", tree, "-p", "HEAD", "-m", message], cwd=cwd)).stdout.decode().strip()
        await git(["update-ref", "-m", "subagent-host turn", "HEAD", commit], cwd=cwd)
    if _head_ref(cwd) != "ref: refs/heads/" + workspace.branch:  # the child moved HEAD off the run's branch
        final = (await git(["rev-parse", "HEAD"], cwd=cwd)).stdout.decode("ascii").strip()
        async with locks.hold(workspace.repo.common_dir):
            await git(["update-ref", "-m", "subagent-host turn", "refs/heads/" + workspace.branch, final], cwd=cwd)


async def _write_patch(cwd: str, base_tree: str, tree: str, fd: int) -> None:
    await git(["diff-tree", "-p", "--binary", "--full-index", "-M", base_tree, tree], cwd=cwd, stdout_fd=fd)


def _head_ref(worktree: str) -> str:
    """The worktree's HEAD file as it is (``ref: refs/heads/<branch>``, or a commit id when detached)."""
    try:
        with open(os.path.join(worktree, ".git"), encoding="utf-8") as dotgit:
            admin = dotgit.read().removeprefix("gitdir:").strip()
        with open(os.path.join(worktree, admin, "HEAD"), encoding="utf-8") as head:
            return head.read().strip()
    except OSError:
        return ""


async def remove_worktree(workspace: Workspace, locks: RepoLocks, *, keep_branch: bool) -> None:
    """Remove the worktree (``worktree remove --force --force``, the directory itself if git left it, ``worktree
    prune``) and, unless ``keep_branch``, its branch. Bounded by git's bound; never raises for a missing piece."""
    common = workspace.repo.common_dir
    async with locks.hold(common):
        await git(["worktree", "remove", "--force", "--force", workspace.path], cwd=common, check=False)
        await anyio.to_thread.run_sync(_remove_tree, workspace.path)
        await git(["worktree", "prune"], cwd=common, check=False)
        if not keep_branch:
            await git(["branch", "-D", workspace.branch], cwd=common, check=False)
