"""The parent's repository and its baseline: the working tree as it is now, captured as a commit object.

``probe_repository`` refuses what a worktree cannot be made from (no repository, a bare one, a merge or rebase in
progress). ``capture_baseline`` takes HEAD + staged + unstaged + untracked-not-ignored files through a *private*
index (a copy of the user's index, so git's stat cache spares re-hashing unchanged files): ``add -A``,
``write-tree``, ``commit-tree``. The user's index, working tree, stash, HEAD and branches are never written.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import anyio

from host._exceptions import WorkspaceError
from host.workspace._git import git

__all__ = [
    "DEFAULT_MAX_BASELINE_BYTES",
    "Baseline",
    "Repository",
    "capture_baseline",
    "make_private_dir",
    "probe_repository",
    "snapshot_tree",
]

DEFAULT_MAX_BASELINE_BYTES: Final = 1024**3
"""The default ``max_baseline_bytes``: untracked content over 1 GiB refuses the worktree."""

_NOT_A_REPOSITORY: Final = 'workspace = "worktree" needs a git repository: {path} is not inside one'
_BARE: Final = 'workspace = "worktree" needs a working tree: {path} is a bare repository'
_MERGING: Final = (
    'workspace = "worktree" cannot start while a merge is in progress in {path}: finish it (git commit) or abort '
    "it (git merge --abort) first"
)
_REBASING: Final = (
    'workspace = "worktree" cannot start while a rebase is in progress in {path}: finish it (git rebase '
    "--continue) or abort it (git rebase --abort) first"
)
_TOO_LARGE: Final = (
    "the untracked files in {path} hold {size} bytes, over max_baseline_bytes ({limit}): ignore them in "
    ".gitignore or raise max_baseline_bytes"
)
_BASELINE_MESSAGE: Final = "subagent-host baseline"


@dataclass(frozen=True, slots=True)
class Repository:
    """The parent's repository as seen from the child's cwd."""

    toplevel: str
    """The absolute top of the parent's working tree."""
    common_dir: str
    """The absolute common git dir (shared by every worktree of the repository)."""
    git_dir: str
    """The absolute git dir of the parent's working tree (its index, ``MERGE_HEAD``, ...)."""
    prefix: str
    """The cwd relative to ``toplevel`` (``""`` at the top), so the child starts in the same subdirectory."""
    head: str | None
    """The commit HEAD names, ``None`` on an unborn branch."""


@dataclass(frozen=True, slots=True)
class Baseline:
    """The parent's tree as captured: a commit (parent: HEAD) and its tree."""

    commit: str
    tree: str


async def probe_repository(cwd: str) -> Repository:
    """The repository ``cwd`` is in.

    Raises:
        WorkspaceError: not a repository, a bare one, a merge or rebase in progress, or git missing/failing.
    """
    result = await git(
        ["rev-parse", "--is-bare-repository", "--absolute-git-dir", "--git-common-dir", "--show-prefix"],
        cwd=cwd,
        check=False,
    )
    if result.returncode != 0:
        raise WorkspaceError(_NOT_A_REPOSITORY.format(path=cwd), "not-a-repository")
    lines = result.stdout.decode("utf-8", "surrogateescape").split("\n")
    if lines[0] == "true":
        raise WorkspaceError(_BARE.format(path=cwd), "bare-repository")
    git_dir = lines[1]
    common_dir = _absolute(cwd, lines[2])
    prefix = lines[3] if len(lines) > 3 else ""
    toplevel_result = await git(["rev-parse", "--show-toplevel"], cwd=cwd, check=False)
    if toplevel_result.returncode != 0:
        raise WorkspaceError(_BARE.format(path=cwd), "bare-repository")
    toplevel = toplevel_result.stdout.decode("utf-8", "surrogateescape").rstrip("\n")
    in_progress = _operation_in_progress(git_dir)
    if in_progress == "merge":
        raise WorkspaceError(_MERGING.format(path=toplevel), "merge-in-progress")
    if in_progress == "rebase":
        raise WorkspaceError(_REBASING.format(path=toplevel), "rebase-in-progress")
    head_result = await git(["rev-parse", "--verify", "-q", "HEAD^{commit}"], cwd=toplevel, check=False)
    head = head_result.stdout.decode("ascii").strip() if head_result.returncode == 0 else None
    return Repository(toplevel=toplevel, common_dir=common_dir, git_dir=git_dir, prefix=prefix, head=head)


def _absolute(base: str, path: str) -> str:
    return os.path.normpath(os.path.join(base, path))


def _operation_in_progress(git_dir: str) -> str | None:
    if os.path.exists(os.path.join(git_dir, "MERGE_HEAD")):
        return "merge"
    if any(os.path.exists(os.path.join(git_dir, name)) for name in ("rebase-merge", "rebase-apply")):
        return "rebase"
    return None


def make_private_dir(path: Path) -> Path:
    """Create ``path`` (0700) and its parents if missing; return it."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def _untracked_bytes(toplevel: str, listing: bytes) -> int:
    total = 0
    for raw in listing.split(b"\0"):
        if raw:
            try:
                total += os.lstat(os.path.join(os.fsencode(toplevel), raw)).st_size
            except OSError:
                continue
    return total


async def snapshot_tree(worktree: str, git_dir: str, scratch: Path) -> str:
    """The tree of ``worktree``'s files as they are now (tracked, modified and untracked-not-ignored), written
    through a private copy of its index; the worktree's own index is left alone."""
    with tempfile.TemporaryDirectory(dir=make_private_dir(scratch)) as temporary:
        index = os.path.join(temporary, "index")
        try:
            await anyio.to_thread.run_sync(shutil.copyfile, os.path.join(git_dir, "index"), index)
        except FileNotFoundError:
            pass  # no index yet (a fresh repository): add -A hashes everything
        await git(["add", "-A", "--", "."], cwd=worktree, index_file=index)
        # --missing-ok: add -A has just written every blob the tree names; without it write-tree looks each of the
        # invalidated directories' entries up in the object store again (bench/worktree.py).
        result = await git(["write-tree", "--missing-ok"], cwd=worktree, index_file=index)
    return result.stdout.decode("ascii").strip()


async def capture_baseline(repo: Repository, scratch: Path, max_bytes: int) -> Baseline:
    """Capture the parent's working tree as a commit whose parent is HEAD.

    Raises:
        WorkspaceError: the untracked content is over ``max_bytes`` (``baseline-too-large``, naming the size), or
            git failed.
    """
    listing = await git(["ls-files", "-z", "--others", "--exclude-standard"], cwd=repo.toplevel)
    size = await anyio.to_thread.run_sync(_untracked_bytes, repo.toplevel, listing.stdout)
    if size > max_bytes:
        raise WorkspaceError(_TOO_LARGE.format(path=repo.toplevel, size=size, limit=max_bytes), "baseline-too-large")
    tree = await snapshot_tree(repo.toplevel, repo.git_dir, scratch)
    parents = ["-p", repo.head] if repo.head is not None else []
    result = await git(["commit-tree", tree, *parents, "-m", _BASELINE_MESSAGE], cwd=repo.toplevel)
    return Baseline(commit=result.stdout.decode("ascii").strip(), tree=tree)
