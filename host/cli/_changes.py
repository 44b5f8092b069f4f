"""``runs apply``, ``runs show --patch`` and the worktree side of ``runs prune``.

The conflicting paths ``runs apply`` lists are the child's file names: neutralised on the terminal.
"""

from __future__ import annotations

import codecs
import os
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final, cast

import anyio

from host._exceptions import WorkspaceError
from host._files import open_regular
from host.cli._render import neutralise
from host.cli._support import JSON_SCHEMA_VERSION, json_line
from host.sessions import sessions_dir
from host.tools import ChangesApplyValue, apply_text, apply_value
from host.workspace import Workspaces, patch_path

__all__ = ["apply_run", "changes_lines", "delete_pruned_branches", "reclaim_worktrees_now", "show_patch"]

_EXIT_OK: Final = 0
_EXIT_FAILED: Final = 1
_CHANGES_SUFFIX: Final = ".changes.json"
_PATCH_CHUNK_BYTES: Final = 1024 * 1024  # how much of a patch `runs show --patch` holds at once
_NO_PATCH: Final = 'subagent-host: no kept changes match "{prefix}"'
_AMBIGUOUS: Final = 'subagent-host: run id prefix "{prefix}" is ambiguous: {listed}'


def _runs_with_changes(state_dir: Path) -> list[str]:
    try:
        names = os.listdir(state_dir / "runs")
    except FileNotFoundError:
        return []
    return sorted(name[: -len(_CHANGES_SUFFIX)] for name in names if name.endswith(_CHANGES_SUFFIX))


def _resolve(state_dir: Path, prefix: str) -> str:
    """The run id with kept changes that is ``prefix`` or uniquely starts with it.

    Raises:
        LookupError: none, or several (its text says which).
    """
    ids = _runs_with_changes(state_dir)
    matches = [run_id for run_id in ids if run_id.startswith(prefix)] if prefix else []
    if prefix in matches:
        return prefix
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise LookupError(_NO_PATCH.format(prefix=neutralise(prefix)))
    raise LookupError(_AMBIGUOUS.format(prefix=neutralise(prefix), listed=", ".join(matches)))


def changes_lines(data: dict[str, Any]) -> list[str]:
    """``runs show``'s lines for a ``changes`` record: the summary, then one neutralised line per file."""
    files: object = data.get("files")
    if not isinstance(files, list) or not files:
        return []
    items = [cast("dict[str, object]", item) for item in cast("list[object]", files) if isinstance(item, dict)]
    branch = neutralise(str(data.get("branch", "-")))
    lines = [f"changes: {len(items)} file(s), +{data.get('insertions', 0)} -{data.get('deletions', 0)} on {branch}"]
    for entry in items:
        path = neutralise(str(entry.get("path", "-"))).replace("\n", "\\n").replace("\t", "\\t")
        counts = f"+{entry.get('insertions', 0)} -{entry.get('deletions', 0)}"
        lines.append(f"  {entry.get('status', '-')} {path} ({counts})")
    return lines


def show_patch(state_dir: Path, prefix: str) -> int:
    """``runs show RUN_ID --patch``: the patch bytes as they are (a patch is meant for git, not a terminal), streamed
    in chunks (memory stays bounded however large it is); only a regular file is read (a FIFO there is no patch)."""
    try:
        run_id = _resolve(state_dir, prefix)
        patch = open_regular(patch_path(state_dir / "runs", run_id))
    except (LookupError, OSError) as exc:
        return _fail(str(exc) if isinstance(exc, LookupError) else _NO_PATCH.format(prefix=neutralise(prefix)))
    with patch:
        if sys.stdout.isatty():
            decoder = codecs.getincrementaldecoder("utf-8")("replace")
            while chunk := patch.read(_PATCH_CHUNK_BYTES):
                sys.stdout.write(neutralise(decoder.decode(chunk)))
            sys.stdout.write(neutralise(decoder.decode(b"", final=True)))
        else:
            shutil.copyfileobj(patch, sys.stdout.buffer, _PATCH_CHUNK_BYTES)
    sys.stdout.flush()
    return _EXIT_OK


def apply_run(state_dir: Path, prefix: str, *, check: bool, as_json: bool) -> int:
    """``runs apply RUN_ID [--check]``: exit 0 when applied (or it applies), 1 on a conflict or no such run."""
    try:
        run_id = _resolve(state_dir, prefix)
    except LookupError as exc:
        return _fail(str(exc), as_json)
    workspaces = Workspaces(state_dir)
    try:
        value: dict[str, Any] = anyio.run(_apply, workspaces, run_id, check)
    except WorkspaceError as exc:
        return _fail(f"subagent-host: {exc}", as_json)
    outcome = ChangesApplyValue.model_validate(value)
    if as_json:
        _out(json_line({"schema": JSON_SCHEMA_VERSION, **value}, terminal=sys.stdout.isatty()))
    elif outcome.conflicts:
        sys.stderr.write(apply_text(outcome, neutralize=True).replace(outcome.repo, neutralise(outcome.repo)) + "\n")
    else:
        _out(neutralise(apply_text(outcome)) + "\n")
    return _EXIT_FAILED if outcome.conflicts else _EXIT_OK


async def _apply(workspaces: Workspaces, run_id: str, check: bool) -> dict[str, Any]:
    return await apply_value(workspaces, run_id, check=check)


def reclaim_worktrees_now(state_dir: Path) -> None:
    """Reclaim the worktrees of dead hosts (``runs prune`` does this first, as every host start does)."""
    anyio.run(Workspaces(state_dir).reclaim)


def delete_pruned_branches(state_dir: Path, removed: Iterable[str]) -> None:
    """Delete the branch, patch and changes file of every pruned run, and of kept changes whose record is gone (a
    reclaim salvages a session's worktree under the session id: kept while the session file is there)."""
    runs, sessions = state_dir / "runs", sessions_dir(state_dir)
    orphans = [
        run_id
        for run_id in _runs_with_changes(state_dir)
        if not (runs / f"{run_id}.jsonl").exists() and not (sessions / f"{run_id}.json").exists()
    ]
    targets = sorted({*removed, *orphans})
    if targets:
        anyio.run(Workspaces(state_dir).delete_branches, targets)


def _fail(message: str, as_json: bool = False) -> int:
    sys.stderr.write(message + "\n")
    if as_json:
        _out(json_line({"schema": JSON_SCHEMA_VERSION, "error": message}, terminal=sys.stdout.isatty()))
    return _EXIT_FAILED


def _out(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()
