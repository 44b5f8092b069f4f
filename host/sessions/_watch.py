"""Noticing that another process closed a session this host holds (``subagent-host sessions close ID``).

The session file is the shared truth between host processes. A host remembers the file's stamp (inode,
``mtime_ns``, size) from its own last write or read; one ``stat`` tells whether anything else wrote it since, and
only then is the file read again. ``os.replace`` gives every write a new inode, so an unchanged stamp means an
unchanged file (docs/behaviour.md#sessions-persistence).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Final

import anyio.to_thread

from host.sessions._session import Session
from host.sessions._store import (
    SessionRecord,
    read_session_file,
    session_file_bytes,
    sessions_dir,
    write_session_bytes,
    write_session_file,
)

__all__ = [
    "CLOSE_CHECK_INTERVAL_S",
    "FileStamp",
    "closed_elsewhere",
    "honour_close",
    "stamp_of",
    "write_watched",
    "write_watched_off_loop",
]

logger = logging.getLogger(__name__)

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


def write_watched(state_dir: Path, record: SessionRecord, session: Session | None) -> None:
    """Write ``record``; for a session this host holds, first take in another process's close (never overwrite it),
    then remember the new stamp.

    Raises:
        OSError: the file could not be written.
    """
    if session is not None and session.record is record:
        honour_close(state_dir, session)
    write_session_file(state_dir, record)
    if session is not None:
        session.file_stamp = stamp_of(state_dir, record.session_id)


async def write_watched_off_loop(state_dir: Path | None, record: SessionRecord, session: Session | None) -> None:
    """``write_watched`` with the write (and its ``fsync``) in a worker thread, of the file's bytes taken on the loop
    (a snapshot of ``record``), so the event loop never waits on the disk; if ``record`` changed meanwhile (a
    ``close`` or the table's ``aclose`` wrote it on the loop, and this older snapshot may have replaced theirs), it is
    written again. Nothing without a state directory; a failed write is logged (as the table's own writes are)."""
    if state_dir is None:
        return
    if session is not None and session.record is record:
        honour_close(state_dir, session)
    written = session_file_bytes(record)
    try:
        stamp = await anyio.to_thread.run_sync(_write_and_stamp, state_dir, record.session_id, written)
        if session is not None:
            session.file_stamp = stamp
        if session_file_bytes(record) != written:
            write_watched(state_dir, record, session)
    except OSError as exc:
        logger.warning("subagent-host: writing session %s failed: %s", record.session_id, exc.strerror)


def _write_and_stamp(state_dir: Path, session_id: str, data: bytes) -> FileStamp | None:
    write_session_bytes(state_dir, session_id, data)
    return stamp_of(state_dir, session_id)
