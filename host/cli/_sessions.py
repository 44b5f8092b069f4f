"""``subagent-host sessions list | show | close``: read and close the sessions of a state directory.

``list`` prints one line per session (``--json``: ``{"schema": 1, "sessions": [...]}``), ``show`` prints the session
and then every turn as ``runs show`` prints a run, and ``close`` marks the session closed (a later ``run --session``
then ends ``session-expired``). A host process that holds the session warm honours the file: its reaper takes the
child down within ``CLOSE_CHECK_INTERVAL_S`` (1 s) plus the child's close, and a call on the session is refused at
once (``host.sessions._watch``). A ``worktree`` session's worktree is removed here (its branch kept when it holds
changes) unless a running host holds it; that host removes it when it takes the child down. Exit status: 0 success,
1 no such session, 2 usage error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Final

import anyio

from host._exceptions import WorkspaceError
from host.cli._render import neutralise
from host.cli._runs import transcript_lines
from host.cli._support import JSON_SCHEMA_VERSION, json_line
from host.records import RunNotFoundError, find_run, resolve_state_dir
from host.sessions import SessionRecord, list_session_files, read_session_file, workspace_of, write_session_file
from host.workspace import Workspaces

__all__ = ["run_sessions_command"]

_EXIT_OK: Final = 0
_EXIT_NOT_FOUND: Final = 1
_IN_USE: Final = "the worktree of session {session_id} is in use by a running host, which removes it when it closes"
_FAILED: Final = "removing the worktree of session {session_id} failed"


def run_sessions_command(args: argparse.Namespace) -> int:
    """Run ``sessions <action>`` and return its exit status."""
    state_dir = resolve_state_dir(args.state_dir)
    if args.sessions_command == "list":
        return _list(state_dir, as_json=args.json)
    record = read_session_file(state_dir, args.session_id)
    if record is None:
        message = f'subagent-host: no session "{neutralise(args.session_id)}"'
        sys.stderr.write(message + "\n")
        if getattr(args, "json", False):
            _out(json_line({"schema": JSON_SCHEMA_VERSION, "error": message}, terminal=sys.stdout.isatty()))
        return _EXIT_NOT_FOUND
    if args.sessions_command == "show":
        return _show(state_dir, record, as_json=args.json)
    record.state = "closed"
    write_session_file(state_dir, record)
    if record.worktree is not None and not _retire_worktree(state_dir, record):
        sys.stderr.write(f"subagent-host: {_IN_USE.format(session_id=record.session_id)}\n")
    _out(f"closed session {record.session_id}\n")
    return _EXIT_OK


def _retire_worktree(state_dir: Path, record: SessionRecord) -> bool:
    """Remove the closed session's worktree (its branch kept when it holds changes); ``False`` when a running host
    holds it (that host removes it when it closes)."""
    assert record.worktree is not None
    saved = workspace_of(record.session_id, record.worktree)
    try:
        return anyio.run(Workspaces(state_dir).retire, saved)
    except (WorkspaceError, OSError):
        sys.stderr.write(f"subagent-host: {_FAILED.format(session_id=record.session_id)}\n")
        return True


def _summary(record: SessionRecord) -> dict[str, Any]:
    return {
        "session_id": record.session_id,
        "provider": record.provider,
        "kind": record.kind,
        "state": record.state,
        "turns": record.turns,
        "created": record.created,
        "last_used": record.last_used,
        "cwd": record.cwd,
        "label": record.label,
        "workspace": record.workspace,
        "branch": record.worktree.branch if record.worktree is not None else None,
        "forked_from": record.forked_from,
    }


def _list(state_dir: Path, *, as_json: bool) -> int:
    records = list_session_files(state_dir)
    if as_json:
        sessions = [_summary(record) for record in records]
        _out(json_line({"schema": JSON_SCHEMA_VERSION, "sessions": sessions}, terminal=sys.stdout.isatty()))
        return _EXIT_OK
    for record in records:
        label = neutralise(record.label or "").replace("\n", " ")
        fields = [record.session_id, record.last_used, neutralise(record.provider), record.state, f"{record.turns}"]
        _out("  ".join([*fields, label]).rstrip() + "\n")
    return _EXIT_OK


def _show(state_dir: Path, record: SessionRecord, *, as_json: bool) -> int:
    if as_json:
        turns: list[dict[str, Any]] = []
        for run_id in record.runs:
            try:
                run = find_run(state_dir, run_id)
            except (RunNotFoundError, LookupError):
                turns.append({"run_id": run_id, "status": "pruned"})
                continue
            turns.append({"run_id": run.run_id, "status": run.status, "records": run.records})
        obj = {"schema": JSON_SCHEMA_VERSION, **_summary(record), "turns": turns}
        _out(json_line(obj, terminal=sys.stdout.isatty()))
        return _EXIT_OK
    lines = [
        f"session {record.session_id}",
        f"provider: {neutralise(record.provider)} ({record.kind})",
        f"state: {record.state}",
        f"turns: {record.turns}",
        f"created: {neutralise(record.created)}",
        f"last used: {neutralise(record.last_used)}",
        f"cwd: {neutralise(record.cwd or '-')}",
    ]
    if record.forked_from is not None:
        lines.append(f"forked from: {neutralise(record.forked_from)}")
    if record.worktree is not None:
        lines.append(f"workspace: worktree on branch {neutralise(record.worktree.branch)}")
    for number, run_id in enumerate(record.runs, start=1):
        lines += ["", f"--- turn {number} ---"]
        try:
            lines += transcript_lines(find_run(state_dir, run_id))
        except LookupError:
            lines.append(f"run {run_id}: no longer recorded (pruned)")
    _out("\n".join(lines) + "\n")
    return _EXIT_OK


def _out(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()
