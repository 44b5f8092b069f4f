"""Git worktree workspaces: one locked worktree per owner (a one-shot run, or a session), its baseline, the changes
after every turn as a branch + binary patch, apply on request, and reclaim after a host died.

Uses nothing above ``host.process`` level: git runs through ``_git.git`` (argv lists, bounded), and every command
that writes the shared ``.git`` holds the repository's lock (in-process and across processes).
"""

from __future__ import annotations

from host.workspace._apply import ApplyOutcome
from host.workspace._baseline import DEFAULT_MAX_BASELINE_BYTES, Baseline, Repository
from host.workspace._changes import ChangedFile, Changes, FileStatus, changes_line
from host.workspace._git import MIN_GIT_VERSION, WorkspaceErrorKind
from host.workspace._store import patch_path, read_changes_file
from host.workspace._workspaces import Workspaces
from host.workspace._worktree import BRANCH_PREFIX, SetupOutcome, Workspace

__all__ = [
    "BRANCH_PREFIX",
    "DEFAULT_MAX_BASELINE_BYTES",
    "MIN_GIT_VERSION",
    "ApplyOutcome",
    "Baseline",
    "ChangedFile",
    "Changes",
    "FileStatus",
    "Repository",
    "SetupOutcome",
    "Workspace",
    "WorkspaceErrorKind",
    "Workspaces",
    "changes_line",
    "patch_path",
    "read_changes_file",
]
