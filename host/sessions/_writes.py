"""``SessionFileWriter``: every write and removal of a session file by a host, off the event loop and in order; and
the reading of all of them (``read_all``), off the loop too.

A write takes the file's bytes on the loop (a snapshot of the record at that moment), then writes them (temporary
file, ``fsync``, ``os.replace``: ``host.sessions._store``) in a worker thread, so the loop never waits on a write.
The writes of one session pass one at a time, first come first served (a fair ``anyio.Lock`` per session id, kept
only while a write of that session is queued or running), and each takes its snapshot only once its turn came: so
a later write never lands before an earlier one, and the last write holds the newest record. Every caller awaits
its write (shielded: a cancelled caller still writes), so a file is written before the call that changed it
returns. Before the snapshot the writer takes in a close another process wrote since (``host.sessions._watch``,
on the loop: one ``stat``, and a read of the file only when another process wrote it), so a host never writes a
closed session back open; after the write it remembers the new file's stamp.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import anyio.to_thread

from host.sessions._session import Session
from host.sessions._store import (
    SessionRecord,
    delete_session_file,
    list_session_files,
    session_file_bytes,
    write_session_bytes,
)
from host.sessions._watch import FileStamp, honour_close, stamp_of

__all__ = ["SessionFileWriter"]

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class _Turnstile:
    """The queue of one session's file operations: a fair lock and how many operations hold or wait for it."""

    lock: anyio.Lock = field(default_factory=lambda: anyio.Lock(fast_acquire=True))
    """Fair; taken without a trip through the event loop when free and nobody waits."""
    users: int = 0


class SessionFileWriter:
    """The session files of one host's table (``state_dir=None``: the host keeps no files, and nothing is written)."""

    def __init__(self, state_dir: Path | None) -> None:
        self._state_dir = state_dir
        self._turnstiles: dict[str, _Turnstile] = {}

    async def write(self, record: SessionRecord, session: Session | None) -> None:
        """Write ``record`` as its session's file from a worker thread, after every earlier operation on the same
        file, and return once it is written. ``session`` (the one holding ``record``, if this host holds it) takes
        in a close by another process first and remembers the new stamp. A failed write is logged."""
        state_dir = self._state_dir
        if state_dir is None:
            return
        async with self._turn(record.session_id):
            if session is not None and session.record is record:
                honour_close(state_dir, session)
            data = session_file_bytes(record)
            try:
                stamp = await anyio.to_thread.run_sync(_write_and_stamp, state_dir, record.session_id, data)
            except OSError as exc:
                logger.warning("subagent-host: writing session %s failed: %s", record.session_id, exc.strerror)
                return
            if session is not None:
                session.file_stamp = stamp

    async def delete(self, session_id: str) -> None:
        """Remove the file of ``session_id`` (if any) from a worker thread, after every earlier operation on it. A
        failed removal is logged."""
        state_dir = self._state_dir
        if state_dir is None:
            return
        async with self._turn(session_id):
            try:
                await anyio.to_thread.run_sync(delete_session_file, state_dir, session_id)
            except OSError as exc:
                logger.warning("subagent-host: removing an expired session file failed: %s", exc.strerror)

    async def read_all(self) -> list[SessionRecord]:
        """Every readable session file (``list_session_files``), read in a worker thread: tens of ms per thousand
        files, never on the loop. A cancelled caller returns at once (the thread only reads)."""
        if self._state_dir is None:
            return []
        return await anyio.to_thread.run_sync(list_session_files, self._state_dir, abandon_on_cancel=True)

    @contextlib.asynccontextmanager
    async def _turn(self, session_id: str) -> AsyncGenerator[None]:
        """This session's turn, first come first served, shielded (an operation once asked for is done)."""
        with anyio.CancelScope(shield=True):
            turnstile = self._turnstiles.get(session_id)
            if turnstile is None:
                turnstile = self._turnstiles[session_id] = _Turnstile()
            turnstile.users += 1
            try:
                async with turnstile.lock:
                    yield
            finally:
                turnstile.users -= 1
                if turnstile.users == 0:
                    del self._turnstiles[session_id]


def _write_and_stamp(state_dir: Path, session_id: str, data: bytes) -> FileStamp | None:
    write_session_bytes(state_dir, session_id, data)
    return stamp_of(state_dir, session_id)
