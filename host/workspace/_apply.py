"""Apply a run's kept patch to the parent's *current* working tree, all or nothing.

The merge happens in a private index: a copy of the user's index brought to the working tree as it is now
(``add -A``), then ``git apply --cached --3way`` with the patch. Any conflict (an unmerged entry, or a hunk that
does not apply) → nothing is written and the conflicting paths are returned. Otherwise the files that differ between
the two private trees are written to the working tree (``checkout-index``) or removed: the user's index, HEAD,
branches and stash are never written, and no conflict marker is ever left in a file.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import anyio

from host.workspace._baseline import make_private_dir, probe_repository
from host.workspace._changes import ChangedFile
from host.workspace._git import git

__all__ = ["ApplyOutcome", "apply_patch"]

_ERROR_PATH: Final = re.compile(
    r"^error: (?:patch failed: (.+):\d+|(.+): (?:does not exist in index|already exists in (?:index|working directory)"
    r"|does not match index|No such file or directory))$"
)


@dataclass(frozen=True, slots=True)
class ApplyOutcome:
    """What applying (or checking) a run's patch found."""

    repo: str
    """The top of the working tree the patch was (or would be) applied to."""
    applied: bool
    """Whether the working tree was written (never with ``check_only`` or a conflict)."""
    conflicts: list[str]
    """The conflicting paths (child text); empty when the patch applies."""
    files: list[ChangedFile]
    """The patch's files."""


def _failed_paths(stderr: bytes, files: list[ChangedFile]) -> list[str]:
    known = {item.path for item in files}
    found: list[str] = []
    for line in stderr.decode("utf-8", "surrogateescape").splitlines():
        match = _ERROR_PATH.match(line)
        path = (match.group(1) or match.group(2)) if match else None
        if path in known and path not in found:
            found.append(path)
    return found or sorted(known)


def _remove_files(top: bytes, removed: list[bytes]) -> None:
    """Remove deleted files, then their directories left empty (up to the top)."""
    for relative in removed:
        path = os.path.join(top, relative)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        parent = os.path.dirname(path)
        while parent != top and parent.startswith(top):
            try:
                os.rmdir(parent)
            except OSError:
                break
            parent = os.path.dirname(parent)


async def apply_patch(
    repo_dir: str, patch: Path, files: list[ChangedFile], scratch: Path, *, check_only: bool
) -> ApplyOutcome:
    """Three-way apply ``patch`` onto the working tree of ``repo_dir`` (or only check it).

    Raises:
        WorkspaceError: ``repo_dir`` is no longer a usable repository (mid-merge/rebase included), or git failed.
    """
    repo = await probe_repository(repo_dir)
    top = repo.toplevel
    with tempfile.TemporaryDirectory(dir=make_private_dir(scratch)) as temporary:
        index = os.path.join(temporary, "index")
        try:
            await anyio.to_thread.run_sync(shutil.copyfile, os.path.join(repo.git_dir, "index"), index)
        except FileNotFoundError:
            pass
        await git(["add", "-A", "--", "."], cwd=top, index_file=index)
        current = (await git(["write-tree"], cwd=top, index_file=index)).stdout.decode("ascii").strip()
        applied = await git(["apply", "--cached", "--3way", str(patch)], cwd=top, index_file=index, check=False)
        unmerged = await git(["ls-files", "-u", "-z"], cwd=top, index_file=index)
        conflicts: list[str] = []
        for entry in unmerged.stdout.split(b"\0"):
            if b"\t" in entry:
                path = os.fsdecode(entry.split(b"\t", 1)[1])
                if path not in conflicts:
                    conflicts.append(path)
        if applied.returncode != 0 and not conflicts:
            conflicts = _failed_paths(applied.stderr, files)
        if conflicts or check_only:
            return ApplyOutcome(repo=top, applied=False, conflicts=conflicts, files=files)
        merged = (await git(["write-tree"], cwd=top, index_file=index)).stdout.decode("ascii").strip()
        diff = await git(["diff-tree", "-r", "-z", "--no-renames", "--name-status", current, merged], cwd=top)
        fields = diff.stdout.split(b"\0")
        written: list[bytes] = []
        removed: list[bytes] = []
        for position in range(0, len(fields) - 1, 2):
            (removed if fields[position] == b"D" else written).append(fields[position + 1])
        await anyio.to_thread.run_sync(_remove_files, os.fsencode(top), removed)
        if written:
            await git(
                ["checkout-index", "-f", "-z", "--stdin"], cwd=top, index_file=index, stdin=b"\0".join(written) + b"\0"
            )
    return ApplyOutcome(repo=top, applied=True, conflicts=[], files=files)
