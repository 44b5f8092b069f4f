"""Noticing that another process closed a session this host holds (``subagent-host sessions close ID``).

The session file is the shared truth between host processes. A host remembers the file's stamp (inode,
``mtime_ns``, size) from its own last write or read; one ``stat`` tells whether anything else wrote it since, and
only then is the file read again. ``os.replace`` gives every write a new inode, so an unchanged stamp means an
unchanged file (docs/behaviour.md#sessions-persistence).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

from host.sessions._session import Session
from host.sessions._store import read_session_file, sessions_dir

__all__ = [
    "CLOSE_CHECK_INTERVAL_S",
    "FileStamp",
    "closed_elsewhere",
    "honour_close",
    "stamp_of",
]

CLOSE_CHECK_INTERVAL_S: Final = 1.0
"""How often the reaper checks the files of its idle warm sessions for a close by another process."""

FileStamp = tuple[int, int, int]


def stamp_of(state_dir: Path, session_id: str) -> FileStamp | None:
    """The file's ``(inode, mtime_ns, size)``, or ``None`` when it does not exist (or cannot be read)."""
    try:
        facts = os.stat(sessions_dir(state_dir) / f"{session_id}.json")
    except OSError:
        return None
    return (facts.st_ino, facts.st_mtime_ns, facts.st_size)


def closed_elsewhere(state_dir: Path, session: Session) -> bool:
    """Whether the file of ``session`` now says ``closed`` although this host did not close it.

    One ``stat`` when nothing else wrote the file since this host's last write or read; the file is read only when
    its stamp changed, and the new stamp is remembered either way.
    """
    stamp = stamp_of(state_dir, session.id)
    if stamp is None or stamp == session.file_stamp:
        return False
    session.file_stamp = stamp
    record = read_session_file(state_dir, session.id)
    return record is not None and record.state == "closed" and session.record.state != "closed"


def honour_close(state_dir: Path | None, session: Session) -> bool:
    """Whether ``session`` is closed, marking its record so when another process closed its file since."""
    if session.record.state != "closed" and state_dir is not None and closed_elsewhere(state_dir, session):
        session.record.state = "closed"
    return session.record.state == "closed"
