"""The dashboard's reads of the state directory besides the run index: a run's facts, its patch, stderr, sessions.

Every path is built from the state directory and a name that was checked against ``NAME_PATTERN`` (letters,
digits, ``_`` and ``-`` only: no slash, no dot) and found in a directory listing, so no request can name a file
outside the state directory. Every read is bounded and opens only a regular file, never blocking and never through a
symlink (``host._files``): a FIFO, a device or a symlink there reads as missing. Nothing here writes.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Final, cast

from host._files import open_regular
from host.sessions._store import MAX_SESSION_FILE_BYTES
from host.ui._index import read_records_from

__all__ = ["NAME_PATTERN", "read_patch_files", "read_run_facts", "read_sessions", "read_stderr", "transcript_path"]

NAME_PATTERN: Final = re.compile(r"[A-Za-z0-9_-]{1,128}")
"""A run or session id as the host mints them (uuid4, token_urlsafe); anything else is not found."""
_MAX_PATCH_BYTES: Final = 4 * 1024 * 1024
_MAX_STDERR_BYTES: Final = 256 * 1024
_HEAD_BYTES: Final = 256 * 1024


def transcript_path(state_dir: Path, run_id: str) -> Path | None:
    """The transcript of ``run_id``, or ``None`` when the id is malformed or no such run is recorded."""
    if not NAME_PATTERN.fullmatch(run_id):
        return None
    path = state_dir / "runs" / f"{run_id}.jsonl"
    return path if path.is_file() and not path.is_symlink() else None


def read_run_facts(path: Path) -> dict[str, Any]:
    """The ``run/start`` data of a transcript (empty when unreadable)."""
    try:
        with open_regular(path) as file:
            records, _ = read_records_from(file.read(_HEAD_BYTES))
    except OSError:
        return {}
    for record in records:
        if record.get("type") == "run/start" and isinstance(record.get("data"), dict):
            return cast("dict[str, Any]", record["data"])
    return {}


def read_stderr(state_dir: Path, run_id: str) -> str | None:
    """The kept stderr tail of ``run_id`` (decoded leniently), or ``None`` when there is none."""
    if not NAME_PATTERN.fullmatch(run_id):
        return None
    return _read_text(state_dir / "runs" / f"{run_id}.stderr", _MAX_STDERR_BYTES)


def read_patch_files(state_dir: Path, run_id: str) -> list[dict[str, Any]] | None:
    """The per-file sections of ``<run_id>.patch`` (``[{path, lines: [(kind, line)]}]``), or ``None``."""
    if not NAME_PATTERN.fullmatch(run_id):
        return None
    patch = _read_text(state_dir / "runs" / f"{run_id}.patch", _MAX_PATCH_BYTES)
    if patch is None:
        return None
    files: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in patch.splitlines():
        if line.startswith("diff --git "):
            parts = line.split(" b/", 1)
            current = {"path": parts[1] if len(parts) == 2 else line[len("diff --git ") :], "lines": []}
            files.append(current)
            continue
        if current is None:
            continue
        lines = cast("list[tuple[str, str]]", current["lines"])
        if line.startswith("GIT binary patch"):
            lines.append(("meta", "(binary file changed)"))
            current["binary"] = True
        elif current.get("binary"):
            continue
        elif line.startswith(("+++", "---", "index ", "new file", "deleted file", "similarity", "rename ")):
            lines.append(("meta", line))
        elif line.startswith("@@"):
            lines.append(("hunk", line))
        elif line.startswith("+"):
            lines.append(("add", line))
        elif line.startswith("-"):
            lines.append(("del", line))
        else:
            lines.append(("ctx", line))
    return files


def read_sessions(state_dir: Path) -> dict[str, dict[str, Any]]:
    """The session files of ``<state>/sessions/`` by session id (unreadable or malformed files are skipped)."""
    sessions: dict[str, dict[str, Any]] = {}
    try:
        with os.scandir(state_dir / "sessions") as listing:
            names = [entry.name for entry in listing if entry.is_file(follow_symlinks=False)]
    except OSError:
        return sessions
    for name in names:
        session_id = name[: -len(".json")] if name.endswith(".json") else ""
        if not NAME_PATTERN.fullmatch(session_id):
            continue
        content = _read_text(state_dir / "sessions" / name, MAX_SESSION_FILE_BYTES)
        try:
            value = json.loads(content) if content is not None else None
        except ValueError:
            continue
        if isinstance(value, dict):
            sessions[session_id] = cast("dict[str, Any]", value)
    return sessions


def _read_text(path: Path, limit: int) -> str | None:
    try:
        with open_regular(path) as file:
            return file.read(limit).decode("utf-8", errors="replace")
    except OSError:
        return None
