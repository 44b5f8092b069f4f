"""Session ids and the session files: ``<state>/sessions/<session_id>.json`` (file 0600, directory 0700).

The id is host-minted (``secrets.token_urlsafe(24)``: 192 bits) and is checked for its shape before it names a
file, so a caller's string can never reach another path. A file is written atomically (a private temporary file in
the same directory, ``fsync``, ``os.replace``) and holds only closed host facts, the agent's session id and the
cwd: never environment values, task text or child output.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import PydanticSerializationError

from host._files import FileTooLargeError, NotRegularFileError, read_regular
from host._text import encode_json

__all__ = [
    "MAX_SESSION_FILE_BYTES",
    "SESSION_ID_BYTES",
    "SessionCapability",
    "SessionRecord",
    "SessionState",
    "SessionWorktree",
    "delete_session_file",
    "is_session_id",
    "list_session_files",
    "new_session_id",
    "newest_session",
    "now",
    "read_session_file",
    "seconds_since",
    "session_file_bytes",
    "sessions_dir",
    "write_session_bytes",
    "write_session_file",
]

logger = logging.getLogger(__name__)

SESSION_ID_BYTES: Final = 24
"""Random bytes in a session id (192 bits; the URL-safe text is 32 characters)."""

_ID_SHAPE: Final = re.compile(r"[A-Za-z0-9_-]{32}")
_DIR_MODE: Final = 0o700
_FILE_MODE: Final = 0o600
MAX_SESSION_FILE_BYTES: Final = 16 * 1024 * 1024
"""The largest session file read (a turn adds ~40 bytes, its run id: ~400,000 turns); a larger one is unreadable."""

SessionState = Literal["warm", "cold", "closed"]
SessionCapability = Literal["resume", "load", "close", "fork"]


def new_session_id() -> str:
    """A fresh session id: 192 bits from the OS CSPRNG, URL-safe, never starting with ``-`` (so ``run --session ID``
    never reads it as an option; redrawing one in 64 ids leaves well over 128 bits)."""
    while True:
        session_id = secrets.token_urlsafe(SESSION_ID_BYTES)
        if not session_id.startswith("-"):
            return session_id


def is_session_id(value: str) -> bool:
    """Whether ``value`` has the shape of a host-minted session id."""
    return _ID_SHAPE.fullmatch(value) is not None


class SessionWorktree(BaseModel):
    """Where a ``worktree`` session works: enough to recreate its worktree from its branch in any later host."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    repo: str
    """The parent repository's top directory."""
    common_dir: str
    git_dir: str
    prefix: str
    """The child's cwd relative to the top (it starts in the same subdirectory of the worktree)."""
    path: str
    """``<state>/worktrees/<session_id>``."""
    branch: str
    """``subagent-host/<session_id>``: every turn is committed on it."""
    base: str
    """The baseline commit (the parent's tree when the session's first turn started)."""
    base_tree: str


class SessionRecord(BaseModel):
    """What a session file holds (docs/behaviour.md#sessions)."""

    model_config = ConfigDict(extra="ignore", validate_assignment=False)

    session_id: str
    provider: str
    kind: Literal["acp", "dsh-sdk"]
    agent_session_id: str | None = None
    """The agent's own session id (``None`` until the first handshake established one)."""
    cwd: str | None = None
    created: str
    last_used: str
    turns: int = 0
    state: SessionState = "cold"
    label: str | None = None
    capabilities: list[SessionCapability] | None = None
    """The session methods the agent advertised at the session's last handshake (``None``: no handshake recorded
    one yet, e.g. a file an older host wrote)."""
    runs: list[str] = []
    """The run id of every turn, oldest first."""
    workspace: Literal["shared", "worktree"] | None = None
    """The session's workspace, fixed by its first turn (``None``: a file from before workspaces were recorded)."""
    worktree: SessionWorktree | None = None
    """A ``worktree`` session's worktree, once its first turn made it."""
    forked_from: str | None = None
    """The session this one was forked from (the call's ``fork_session_id``; ``None``: not a fork)."""


def sessions_dir(state_dir: Path) -> Path:
    """The directory holding ``<session_id>.json``."""
    return state_dir / "sessions"


def _ensure_dir(state_dir: Path) -> Path:
    directory = sessions_dir(state_dir)
    for path in (state_dir, directory):
        try:
            path.mkdir(mode=_DIR_MODE, parents=True)
        except FileExistsError:
            continue
        os.chmod(path, _DIR_MODE)  # mkdir's mode is masked by the umask
    return directory


def write_session_file(state_dir: Path, record: SessionRecord) -> None:
    """Write ``record`` atomically (0600). Raises ``OSError`` when the directory or the file cannot be written."""
    write_session_bytes(state_dir, record.session_id, session_file_bytes(record))


def session_file_bytes(record: SessionRecord) -> bytes:
    """What the file of ``record`` holds (a snapshot: later changes to ``record`` do not reach it). A label or path
    holding a lone surrogate is written as its ``\\uXXXX`` escape."""
    try:
        return record.model_dump_json().encode("utf-8")
    except PydanticSerializationError:  # a lone surrogate: pydantic's encoder refuses it
        return encode_json(record.model_dump(mode="json"))


def write_session_bytes(state_dir: Path, session_id: str, data: bytes) -> None:
    """Write ``data`` (``session_file_bytes``) as the file of ``session_id``, atomically (0600).

    Raises:
        OSError: the directory or the file cannot be written.
    """
    directory = _ensure_dir(state_dir)
    target = directory / f"{session_id}.json"
    temporary = directory / f".{session_id}.{secrets.token_hex(4)}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, _FILE_MODE)
    try:
        os.fchmod(fd, _FILE_MODE)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    os.close(fd)
    try:
        os.replace(temporary, target)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def read_session_file(state_dir: Path, session_id: str) -> SessionRecord | None:
    """The record of ``session_id``, or ``None`` when there is none (or it is unreadable or malformed).

    Only a regular file is read (never blocking: a FIFO or a symlink there is unreadable), and at most
    ``MAX_SESSION_FILE_BYTES`` of it."""
    if not is_session_id(session_id):
        return None
    path = sessions_dir(state_dir) / f"{session_id}.json"
    limit = MAX_SESSION_FILE_BYTES
    try:
        data = read_regular(path, limit)
    except (NotRegularFileError, FileTooLargeError):
        logger.warning("subagent-host: session file %s is not a regular file of at most %d bytes; ignored", path, limit)
        return None
    except OSError:  # missing or unreadable
        return None
    try:
        record = SessionRecord.model_validate_json(data)
    except ValidationError:
        # pydantic's JSON reader refuses the escape of a lone surrogate (session_file_bytes writes one for a label
        # or path that is not valid Unicode); the stdlib reader takes it.
        try:
            record = SessionRecord.model_validate(json.loads(data))
        except (ValueError, RecursionError):  # ValidationError and JSONDecodeError are ValueErrors
            logger.warning("subagent-host: session file %s is malformed; ignored", path)
            return None
    return record if record.session_id == session_id else None


def list_session_files(state_dir: Path) -> list[SessionRecord]:
    """Every readable session record, newest ``last_used`` first."""
    directory = sessions_dir(state_dir)
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    records: list[SessionRecord] = []
    for name in names:
        if name.endswith(".json") and not name.startswith("."):
            record = read_session_file(state_dir, name[: -len(".json")])
            if record is not None:
                records.append(record)
    records.sort(key=lambda record: record.last_used, reverse=True)
    return records


def newest_session(state_dir: Path, provider: str, cwd: str) -> SessionRecord | None:
    """The most recently used session of ``provider`` in ``cwd`` that is not closed (``run --continue``)."""
    for record in list_session_files(state_dir):
        if record.provider == provider and record.cwd == cwd and record.state != "closed":
            return record
    return None


def delete_session_file(state_dir: Path, session_id: str) -> None:
    """Remove the file of ``session_id`` if it exists."""
    if is_session_id(session_id):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(sessions_dir(state_dir) / f"{session_id}.json")


def seconds_since(timestamp: str) -> float:
    """Seconds from an RFC 3339 time (as ``rfc3339_now`` writes it) until now; ``inf`` when unreadable."""
    try:
        then = datetime.fromisoformat(timestamp)
    except ValueError:
        return float("inf")
    if then.tzinfo is None:
        then = then.replace(tzinfo=UTC)
    return (datetime.now(UTC) - then).total_seconds()


def now() -> str:
    """The current UTC time as session files record it (RFC 3339, milliseconds, ``Z``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
