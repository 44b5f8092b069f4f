"""What a turn changed: the ``changes`` value, its one host-built summary line, and reading it from git.

File paths come from the child, so they are child text: they appear in ``changes.files`` (structured results,
records) and nowhere else; the summary line holds only counts and the host-built branch name.
"""

from __future__ import annotations

import os
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["ChangedFile", "Changes", "FileStatus", "changes_line", "parse_changes"]

FileStatus = Literal["added", "deleted", "modified", "renamed", "copied", "type-changed"]
"""What happened to one file between the baseline and the turn's tree."""

_STATUS: Final[dict[str, FileStatus]] = {
    "A": "added",
    "D": "deleted",
    "M": "modified",
    "R": "renamed",
    "C": "copied",
    "T": "type-changed",
}
_LINE: Final = "[changes: {count} {noun}, +{insertions} -{deletions} on branch {branch}; apply with changes_apply]"


class ChangedFile(BaseModel):
    """One changed file; ``insertions``/``deletions`` are 0 for a binary file."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    """The path relative to the repository top (the new path of a rename); child text."""
    status: FileStatus
    insertions: int
    deletions: int


class Changes(BaseModel):
    """The changes of a worktree run: a branch holding them, the baseline commit, and per-file counts."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    branch: str
    """``subagent-host/<owner>``: host-built."""
    base: str
    """The baseline commit the changes apply on top of."""
    files: list[ChangedFile]
    insertions: int
    deletions: int


def changes_line(changes: Changes) -> str:
    """``[changes: 3 files, +40 -2 on branch subagent-host/…; apply with changes_apply]``: host facts only."""
    count = len(changes.files)
    return _LINE.format(
        count=count,
        noun="file" if count == 1 else "files",
        insertions=changes.insertions,
        deletions=changes.deletions,
        branch=changes.branch,
    )


def _decode(raw: bytes) -> str:
    return os.fsdecode(raw)


def parse_changes(header: bytes, *, branch: str, base_commit: str) -> Changes:
    """The per-file status and line counts from the ``--raw --numstat -z`` records of one diff (renames detected):
    every raw record first, then every numstat record, in the same order; parsing stops at an empty field (the
    separator before a patch, when ``-p`` follows)."""
    fields = header.split(b"\0")
    statuses: list[tuple[str, str]] = []
    counts: dict[str, tuple[int, int]] = {}
    index = 0
    while index < len(fields) and fields[index]:
        field = fields[index]
        if field.startswith(b":"):
            letter = field.rsplit(b" ", 1)[-1][:1].decode("ascii")
            skip = 2 if letter in ("R", "C") else 1
            statuses.append((letter, _decode(fields[index + skip])))
            index += skip + 1
            continue
        added, deleted, path = field.split(b"\t", 2)
        if path == b"":  # a rename: "<a>\t<d>\t\0<old>\0<new>\0"
            path = fields[index + 2]
            index += 3
        else:
            index += 1
        counts[_decode(path)] = (int(added) if added != b"-" else 0, int(deleted) if deleted != b"-" else 0)
    files = [
        ChangedFile(
            path=path,
            status=_STATUS.get(letter, "modified"),
            insertions=counts.get(path, (0, 0))[0],
            deletions=counts.get(path, (0, 0))[1],
        )
        for letter, path in statuses
    ]
    return Changes(
        branch=branch,
        base=base_commit,
        files=files,
        insertions=sum(item.insertions for item in files),
        deletions=sum(item.deletions for item in files),
    )
