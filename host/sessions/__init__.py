"""Sessions: a parent continues a conversation with the same child across calls (docs/behaviour.md#sessions).

``SessionTable`` (one per ``Host``) owns every session and its warm child between turns, with one reaper for the
idle, LRU and TTL rules; a turn is a run that borrows the child (and a ``worktree`` session's worktree) through a
``TurnLease``. Session files live under
``<state>/sessions/`` (``_store``).
"""

from __future__ import annotations

from host.sessions._refusals import FORK_UNSUPPORTED, fork_unsupported, session_expired
from host.sessions._session import Session, TurnLease
from host.sessions._store import (
    SESSION_ID_BYTES,
    SessionRecord,
    SessionState,
    SessionWorktree,
    is_session_id,
    list_session_files,
    newest_session,
    read_session_file,
    sessions_dir,
    write_session_file,
)
from host.sessions._table import SESSION_WAIT_ABORTED, SessionTable
from host.sessions._worktrees import workspace_of

__all__ = [
    "FORK_UNSUPPORTED",
    "SESSION_ID_BYTES",
    "SESSION_WAIT_ABORTED",
    "Session",
    "SessionRecord",
    "SessionState",
    "SessionTable",
    "SessionWorktree",
    "TurnLease",
    "fork_unsupported",
    "is_session_id",
    "list_session_files",
    "newest_session",
    "read_session_file",
    "session_expired",
    "sessions_dir",
    "workspace_of",
    "write_session_file",
]
