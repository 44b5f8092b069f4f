"""The files a worktree run leaves next to its record: ``<run_id>.patch`` and ``<run_id>.changes.json`` (0600).

``<run_id>.changes.json`` holds ``{"schema": 1, "repo": <the parent's working tree>, "changes": {...}}``: what
``runs apply`` / ``changes_apply`` and ``runs prune`` need, without reading the transcript.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pydantic import ValidationError

from host._files import open_regular_fd, read_regular, write_file_atomically
from host.workspace._changes import Changes

__all__ = [
    "StoredChanges",
    "changes_path",
    "open_patch_file",
    "patch_path",
    "read_changes_file",
    "remove_run_files",
    "write_changes_file",
]

_FILE_MODE: Final = 0o600
_DIR_MODE: Final = 0o700
_RUN_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,128}")
"""A run id as the host mints them (uuid4): no slash, no dot, so no id names a file outside ``runs_dir``."""
_MAX_CHANGES_BYTES: Final = 256 * 1024 * 1024
"""The largest changes file read (a turn records at most 64 MiB of git's facts; its JSON stays well under four times
that); a larger one reads as none."""


def patch_path(runs_dir: Path, run_id: str) -> Path:
    """The binary patch of ``run_id``."""
    return runs_dir / f"{run_id}.patch"


def changes_path(runs_dir: Path, run_id: str) -> Path:
    """The changes file of ``run_id``."""
    return runs_dir / f"{run_id}.changes.json"


def _ensure_dir(runs_dir: Path) -> None:
    if not runs_dir.is_dir():
        runs_dir.mkdir(mode=_DIR_MODE, parents=True, exist_ok=True)
        os.chmod(runs_dir, _DIR_MODE)


def open_patch_file(runs_dir: Path, run_id: str) -> int:
    """A write descriptor on ``<run_id>.patch``, created 0600 (or truncated: a later turn's delta replaces it)."""
    _ensure_dir(runs_dir)
    # Never through a symlink, never waiting on a FIFO put there (both fail: the patch is not written).
    fd = open_regular_fd(patch_path(runs_dir, run_id), flags=os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode=_FILE_MODE)
    try:
        os.set_blocking(fd, True)
        os.fchmod(fd, _FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_changes_file(runs_dir: Path, run_id: str, repo: str, changes: Changes) -> None:
    """Write ``<run_id>.changes.json`` atomically (temp file + ``os.replace``), 0600."""
    _ensure_dir(runs_dir)
    target = changes_path(runs_dir, run_id)
    body = json.dumps({"schema": 1, "repo": repo, "changes": changes.model_dump(mode="json")}).encode()
    write_file_atomically(runs_dir, target.name, body)


@dataclass(frozen=True, slots=True)
class StoredChanges:
    """A run's kept changes: the repository they came from and the ``changes`` value."""

    repo: str
    changes: Changes


def read_changes_file(runs_dir: Path, run_id: str) -> StoredChanges | None:
    """The stored changes of ``run_id``, or ``None`` when it kept none (or the file does not parse, or ``run_id`` is
    not a run id: ``changes_apply`` takes it from the caller, and a path must not reach a file outside ``runs_dir``;
    or it is not a regular file of at most ``_MAX_CHANGES_BYTES``)."""
    if not _RUN_ID.fullmatch(run_id):
        return None
    try:
        data = json.loads(read_regular(changes_path(runs_dir, run_id), _MAX_CHANGES_BYTES))
        return StoredChanges(repo=str(data["repo"]), changes=Changes.model_validate(data["changes"]))
    except (OSError, ValueError, KeyError, TypeError, ValidationError):
        return None


def remove_run_files(runs_dir: Path, run_id: str) -> None:
    """Remove the patch and the changes file of ``run_id`` (missing ones are fine)."""
    for path in (patch_path(runs_dir, run_id), changes_path(runs_dir, run_id)):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
