"""One worktree's life: create (locked, ``.worktreeinclude``), setup, remove, reclaim (the delta of a turn: ``_turn``).

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
from host.workspace._git import RepoLocks, git

__all__ = [
    "BRANCH_PREFIX",
    "SETUP_OUTPUT_CAP_BYTES",
    "SetupOutcome",
    "Workspace",
    "branch_of",
    "copy_included",
    "create_worktree",
    "dead_lock_reason",
    "hold_path",
    "let_go_path",
    "lock_reason",
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
_SETUP_SIGKILL_WAIT_S: Final = 5.0
_held_paths: set[str] = set()
"""The worktrees this process holds: made or checked out again, their removal not yet attempted. A lock reason naming
this process is alive only for these: one whose removal failed or was cut off still names it, and is salvaged like a
dead host's (else this host's next turn of that session would find it "in use" until the host ends)."""


def hold_path(path: str | os.PathLike[str]) -> None:
    """Mark ``path`` held by this process; call it before ``worktree add --lock`` writes a reason naming it."""
    _held_paths.add(os.path.abspath(path))


def let_go_path(path: str | os.PathLike[str]) -> None:
    """This process no longer holds ``path`` (its removal was attempted, or it was never made)."""
    _held_paths.discard(os.path.abspath(path))


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


def dead_lock_reason(reason: str, path: str | os.PathLike[str]) -> str | None:
    """The baseline commit of the lock reason of the worktree at ``path`` when no live host holds it (its process
    is gone, or it is this process, which no longer holds ``path``), else ``None`` (held, or not ours)."""
    match = _REASON.match(reason.strip())
    if match is None:
        return None
    pid, started, base = int(match.group(1)), float(match.group(2)), match.group(3)
    try:
        alive = abs(psutil.Process(pid).create_time() - started) < 0.02
    except psutil.Error:
        alive = False
    if alive and pid == os.getpid():
        alive = os.path.abspath(path) in _held_paths
    return None if alive else base


async def create_worktree(
    repo: Repository, baseline: Baseline, owner: str, path: Path, locks: RepoLocks, *, start: str | None = None
) -> Workspace:
    """``git worktree add --lock`` on a new branch ``subagent-host/<owner>`` at ``start`` (default: the baseline
    commit; a fork: the source session's branch tip), then copy the ignored files ``.worktreeinclude`` names. On any
    failure nothing is left behind (the worktree and the new branch are removed)."""
    branch = branch_of(owner)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    workspace = Workspace(owner=owner, repo=repo, path=str(path), branch=branch, baseline=baseline)
    try:
        hold_path(path)
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
                    start or baseline.commit,
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


async def remove_worktree(workspace: Workspace, locks: RepoLocks, *, keep_branch: bool) -> None:
    """Remove the worktree (``worktree remove --force --force``, the directory itself if git left it, ``worktree
    prune``) and, unless ``keep_branch``, its branch. Bounded by git's bound; never raises for a missing piece. This
    process no longer holds the path afterwards, removed or not (a leftover is salvaged as a dead host's)."""
    common = workspace.repo.common_dir
    try:
        async with locks.hold(common):
            await git(["worktree", "remove", "--force", "--force", workspace.path], cwd=common, check=False)
            await anyio.to_thread.run_sync(_remove_tree, workspace.path)
            await git(["worktree", "prune"], cwd=common, check=False)
            if not keep_branch:
                await git(["branch", "-D", workspace.branch], cwd=common, check=False)
    finally:
        let_go_path(workspace.path)  # left behind, it is salvageable from now on
