"""The one way the host runs git: ``git()`` (argv list, bounded, output capped, errors mapped once) and
``RepoLocks`` (one lock per repository, in-process and across processes).

Every command runs with hooks off, no terminal prompt, the C locale, a fixed host identity for the commits the host
makes, the children's scrubbed environment (no credential-shaped or ``DSH_*`` variable: a filter or helper that
the repository's config names, which a child can write, runs with nothing a child does not get) and none of the
``GIT_*`` variables that would point it at another repository or index, in its own process group; one cut off (its
bound, a cancel) gets SIGTERM before SIGKILL, so git removes its lock files. Raw git text never leaves this module
except on ``__cause__`` of a ``WorkspaceError``.
"""

from __future__ import annotations

import fcntl
import hashlib
import math
import os
import re
import signal
import subprocess
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, cast

import anyio
from anyio.abc import ByteReceiveStream, Process

from host._exceptions import WorkspaceError
from host.process import ProcessTree, build_child_env

__all__ = [
    "GIT_TIMEOUT_S",
    "MAX_GIT_FACT_BYTES",
    "MIN_GIT_VERSION",
    "TERM_GRACE_S",
    "GitCommandError",
    "GitResult",
    "RepoLocks",
    "WorkspaceErrorKind",
    "check_git_version",
    "commit_idents",
    "commit_object",
    "first_leaf",
    "git",
]

WorkspaceErrorKind = Literal[
    "git-missing",
    "git-too-old",
    "git-failed",
    "git-timeout",
    "not-a-repository",
    "bare-repository",
    "merge-in-progress",
    "rebase-in-progress",
    "baseline-too-large",
    "lock-timeout",
    "no-changes-recorded",
    "apply-conflict",
    "worktree-in-use",
    "worktree-lost",
]
"""The closed set of ``WorkspaceError.kind`` values."""

MIN_GIT_VERSION: Final[tuple[int, int]] = (2, 36)
"""The oldest git the workspace needs: ``worktree add --lock --reason`` (2.36) and ``apply --3way --cached``."""
GIT_TIMEOUT_S: Final = 300.0
"""Bounds one git command (a checkout of a very large tree included)."""
_OUTPUT_CAP_BYTES: Final = 256 * 1024 * 1024
"""Bounds the stdout a git command may hand back in memory (patches go straight to a file)."""
MAX_GIT_FACT_BYTES: Final = 64 * 1024
"""The largest file of git's own facts the host reads whole (a worktree's ``.git``, ``HEAD``, ``gitdir``,
``locked``: git writes a path, a ref or a reason there); a larger one is unreadable."""
_STDERR_CAP_BYTES: Final = 64 * 1024
"""How much of a command's stderr is kept (for the raw cause)."""
REPO_LOCK_TIMEOUT_S: Final = 120.0
"""Bounds the wait for another host's hold on the same repository's lock."""
TERM_GRACE_S: Final = 1.0
"""How long a cancelled or timed-out git command's process group has between SIGTERM and SIGKILL: git removes its
lock files (``index.lock``, a ref's ``.lock``) on SIGTERM, never on SIGKILL."""
_KILL_REAP_S: Final = 5.0
"""Bounds the reap of a killed git process."""

_GIT_MISSING: Final = 'workspace = "worktree" needs git, and no git program was found on PATH'
_GIT_TOO_OLD: Final = 'workspace = "worktree" needs git {need} or newer; found {found}'
_GIT_FAILED: Final = "git {command} failed (exit code {code})"
_GIT_TIMEOUT: Final = "git {command} did not finish within {seconds:g} s"
_LOCK_TIMEOUT: Final = "another subagent-host held the repository lock for {seconds:g} s"

# Fixed options of every command: no hooks, no signing, no pager, no fsmonitor daemon started on our behalf.
_CONFIG: Final = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "commit.gpgSign=false",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.quotePath=false",
    "--no-pager",
)
# Variables that would redirect git to another repository, work tree, index or object store.
_REDIRECTING: Final = frozenset(
    {
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_COMMON_DIR",
        "GIT_NAMESPACE",
        "GIT_PREFIX",
        "GIT_QUARANTINE_PATH",
    }
)
_FIXED_ENV: Final = {
    "LC_ALL": "C",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_AUTHOR_NAME": "subagent-host",
    "GIT_AUTHOR_EMAIL": "subagent-host@localhost",
    "GIT_COMMITTER_NAME": "subagent-host",
    "GIT_COMMITTER_EMAIL": "subagent-host@localhost",
}
_IDENTITY: Final = f"{_FIXED_ENV['GIT_AUTHOR_NAME']} <{_FIXED_ENV['GIT_AUTHOR_EMAIL']}>"
"""The author and committer of every commit the host makes (as ``GIT_AUTHOR_*`` / ``GIT_COMMITTER_*`` say)."""
_DATE_VARIABLES: Final = ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE")
"""Set in the host's environment, they date the host's commits as they date ``git commit-tree``'s."""
_VERSION: Final = re.compile(rb"git version (\d+)\.(\d+)")


def _local_stamp(now: float) -> str:
    """The host's identity at ``now`` in the local time zone of that moment, as git stamps it (``+0530``)."""
    offset = time.localtime(now).tm_gmtoff // 60
    sign = "-" if offset < 0 else "+"
    return f"{_IDENTITY} {int(now)} {sign}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"


async def commit_idents(cwd: str | os.PathLike[str]) -> tuple[str, str] | None:
    """The author and committer lines git would stamp a commit with when the host's environment sets
    ``GIT_AUTHOR_DATE`` or ``GIT_COMMITTER_DATE`` (``git var``: git parses the date, the identity stays the
    host's); ``None`` when neither is set (``commit_object`` then stamps the host's identity, now).

    Raises:
        WorkspaceError: git failed (an unparsable date: ``git-failed``) or timed out.
    """
    if not any(os.environ.get(name) for name in _DATE_VARIABLES):
        return None
    author, committer = [
        (await git(["var", name], cwd=cwd)).stdout.decode("utf-8", "replace").strip()
        for name in ("GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT")
    ]
    return author, committer


def commit_object(tree: str, parent: str | None, message: str, idents: tuple[str, str] | None = None) -> bytes:
    """The text of a commit of ``tree`` on ``parent`` (none: a root commit) for ``hash-object -t commit`` (what
    ``commit-tree`` would write): by ``idents`` (author, committer: ``commit_idents``), else by the host's
    identity, now, in the local time zone."""
    author, committer = idents if idents is not None else (_local_stamp(time.time()),) * 2
    parents = f"parent {parent}\n" if parent is not None else ""
    return f"tree {tree}\n{parents}author {author}\ncommitter {committer}\n\n{message}\n".encode()


class GitCommandError(Exception):
    """Raw, host-only: a git command's exit code and the head of its stderr (``__cause__`` of a safe error)."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: bytes) -> None:
        super().__init__(f"{' '.join(argv)}: exit {returncode}: {stderr.decode('utf-8', 'replace').strip()}")
        self.returncode = returncode
        self.stderr = stderr


@dataclass(frozen=True, slots=True)
class GitResult:
    """What a finished git command handed back."""

    returncode: int
    stdout: bytes
    stderr: bytes


def _environment(index_file: str | None, extra: Mapping[str, str] | None) -> dict[str, str]:
    # Scrubbed like a child's: git runs the filters (`filter.<driver>.clean` on `add`, `.smudge` on checkout) and
    # helpers the shared config names, and a child can write that config and the `.gitattributes` naming them.
    env = build_child_env({})
    for name in _REDIRECTING.intersection(env):
        del env[name]
    env.update(_FIXED_ENV)
    if index_file is not None:
        env["GIT_INDEX_FILE"] = index_file
    if extra:
        env.update(extra)
    return env


async def _read_capped(stream: ByteReceiveStream | None, cap: int, sink: list[bytes], keep_tail: bool) -> None:
    if stream is None:
        return
    size = 0
    async for chunk in stream:
        size += len(chunk)
        sink.append(chunk)
        if size > cap:
            if not keep_tail:
                raise WorkspaceError("git output exceeded the host's bound", "git-failed")
            joined = b"".join(sink)[-cap:]
            sink[:] = [joined]
            size = len(joined)


async def _feed(stream: ByteReceiveStream | None, sink: Callable[[bytes], Awaitable[None]]) -> None:
    if stream is None:
        return
    async for chunk in stream:
        await sink(chunk)


def first_leaf(error: Exception) -> Exception:
    """The first plain exception in ``error``, unwrapping task groups' exception groups (callers catch
    ``WorkspaceError``)."""
    while isinstance(error, ExceptionGroup):
        leaves = cast("tuple[Exception, ...]", error.exceptions)  # pyright: ignore[reportUnknownMemberType]
        if not leaves:
            break
        error = leaves[0]
    return cast(Exception, error)


async def _end_process_group(process: Process) -> None:
    """SIGTERM git's process group (git, and the hooks, filters and helpers it started), SIGKILL it after
    ``TERM_GRACE_S`` (or at once when git is gone: what it left), and reap git within ``_KILL_REAP_S``. The caller
    shields it; every wait here is bounded."""
    group = ProcessTree(process.pid)  # the group outlives git while a member lives; its id is not reused meanwhile
    group.send(signal.SIGTERM)
    with anyio.move_on_after(TERM_GRACE_S):
        await process.wait()
    group.send(signal.SIGKILL)
    with anyio.move_on_after(_KILL_REAP_S):
        await process.wait()


async def git(
    args: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    index_file: str | None = None,
    stdin: bytes | Callable[[], Awaitable[bytes]] | None = None,
    on_stdout: Callable[[bytes], Awaitable[None]] | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    timeout_s: float = GIT_TIMEOUT_S,
) -> GitResult:
    """Run ``git <args>`` in ``cwd``, bounded by ``timeout_s``, and return its exit code and output.

    Args:
        args: the git arguments (never a shell string).
        cwd: where git runs.
        index_file: a private ``GIT_INDEX_FILE`` for the command (never the user's index).
        stdin: bytes written to the command's stdin (``None``: no stdin), or an async callable giving them: the
            command is spawned at once and waits for its input (a step whose input is still being computed);
            ``timeout_s`` then counts from the input.
        on_stdout: hand each chunk of stdout to this coroutine function as it arrives instead of returning it (it
            bounds what it keeps; git waits on its pipe while it runs; an exception it raises ends the command and
            propagates).
        env: extra variables.
        check: raise on a non-zero exit.
        timeout_s: the bound. A cancelled or timed-out command's process group gets SIGTERM (git removes its lock
            files), then SIGKILL ``TERM_GRACE_S`` later; the caller's cancel waits for that, at most
            ``TERM_GRACE_S + 5`` s.

    Raises:
        WorkspaceError: git is missing (``git-missing``), timed out (``git-timeout``), failed with ``check``
            (``git-failed``, the raw ``GitCommandError`` on ``__cause__``) or printed more than the bound.
    """
    argv = ["git", *_CONFIG, *args]
    command = args[0] if args else "git"
    try:
        process = await anyio.open_process(
            argv,
            cwd=cwd,
            env=_environment(index_file, env),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except FileNotFoundError as raw:
        raise WorkspaceError(_GIT_MISSING, "git-missing") from raw
    out: list[bytes] = []
    err: list[bytes] = []
    try:
        # A step spawned ahead of its input waits for it unbounded here (the steps computing it are bounded
        # themselves); its own bound counts from the input.
        waits_for_input = stdin is not None and not isinstance(stdin, bytes)
        with anyio.fail_after(math.inf if waits_for_input else timeout_s) as bound:
            try:
                async with anyio.create_task_group() as group:
                    if on_stdout is not None:
                        group.start_soon(_feed, process.stdout, on_stdout)
                    else:
                        group.start_soon(_read_capped, process.stdout, _OUTPUT_CAP_BYTES, out, False)
                    group.start_soon(_read_capped, process.stderr, _STDERR_CAP_BYTES, err, True)
                    if stdin is not None and process.stdin is not None:
                        if not isinstance(stdin, bytes):
                            stdin = await stdin()
                            bound.deadline = anyio.current_time() + timeout_s
                        await process.stdin.send(stdin)
                        await process.stdin.aclose()
            except ExceptionGroup as failed:  # a reader's or the input's failure, raised as itself
                raise first_leaf(failed) from None
            returncode = await process.wait()
    except TimeoutError as raw:
        raise WorkspaceError(_GIT_TIMEOUT.format(command=command, seconds=timeout_s), "git-timeout") from raw
    finally:
        with anyio.CancelScope(shield=True):
            if process.returncode is None:
                await _end_process_group(process)
            await process.aclose()
    result = GitResult(returncode, b"".join(out), b"".join(err))
    if check and returncode != 0:
        raw_error = GitCommandError(args, returncode, result.stderr)
        raise WorkspaceError(_GIT_FAILED.format(command=command, code=returncode), "git-failed") from raw_error
    return result


_checked_version: tuple[int, int] | None = None


async def check_git_version() -> tuple[int, int]:
    """The installed git's (major, minor), checked once per process against ``MIN_GIT_VERSION``.

    Raises:
        WorkspaceError: git is missing (``git-missing``) or older than ``MIN_GIT_VERSION`` (``git-too-old``).
    """
    global _checked_version
    if _checked_version is not None:
        return _checked_version
    result = await git(["--version"], cwd="/", timeout_s=30.0)
    match = _VERSION.search(result.stdout)
    major, minor = (int(match.group(1)), int(match.group(2))) if match else (0, 0)
    found = (major, minor)
    if major < MIN_GIT_VERSION[0] or (major == MIN_GIT_VERSION[0] and minor < MIN_GIT_VERSION[1]):
        shown = result.stdout.decode("ascii", "replace").strip() or "an unknown version"
        need = ".".join(map(str, MIN_GIT_VERSION))
        raise WorkspaceError(_GIT_TOO_OLD.format(need=need, found=shown[:40]), "git-too-old")
    _checked_version = found
    return found


class RepoLocks:
    """One lock per repository: an ``anyio.Lock`` in this process plus an ``flock`` on a file under the state
    directory keyed by the repository's common git dir, held around every command that writes the shared ``.git``
    (worktree add/remove/prune, branch and ref updates)."""

    def __init__(self, lock_dir: Path) -> None:
        self._lock_dir = lock_dir
        self._locks: dict[str, anyio.Lock] = {}

    @asynccontextmanager
    async def hold(self, common_dir: str) -> AsyncGenerator[None]:
        """Hold the lock of the repository whose common git dir is ``common_dir``.

        Raises:
            WorkspaceError: another process held it past ``REPO_LOCK_TIMEOUT_S`` (``lock-timeout``).
        """
        lock = self._locks.setdefault(common_dir, anyio.Lock())
        async with lock:
            self._lock_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            name = hashlib.sha256(common_dir.encode("utf-8", "surrogateescape")).hexdigest()[:32] + ".lock"
            fd = os.open(self._lock_dir / name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                try:
                    with anyio.fail_after(REPO_LOCK_TIMEOUT_S):
                        while True:
                            try:
                                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                                break
                            except BlockingIOError:
                                await anyio.sleep(0.01)
                except TimeoutError as raw:
                    raise WorkspaceError(_LOCK_TIMEOUT.format(seconds=REPO_LOCK_TIMEOUT_S), "lock-timeout") from raw
                yield
            finally:
                os.close(fd)  # closing the descriptor releases the flock
