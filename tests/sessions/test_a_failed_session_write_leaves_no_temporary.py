"""A session file write that fails at its final rename (here: a directory holds the file's name) raises and leaves
no temporary file behind in ``<state>/sessions/``."""

from __future__ import annotations

from pathlib import Path

import pytest

from host.sessions import SessionRecord, sessions_dir, write_session_file
from host.sessions._store import new_session_id, now


def test_a_failed_rename_removes_the_temporary_file(tmp_path: Path) -> None:
    stamp = now()
    record = SessionRecord(session_id=new_session_id(), provider="p", kind="acp", created=stamp, last_used=stamp)
    directory = sessions_dir(tmp_path)
    directory.mkdir(parents=True)
    (directory / f"{record.session_id}.json").mkdir()
    with pytest.raises(OSError):
        write_session_file(tmp_path, record)
    assert sorted(path.name for path in directory.iterdir()) == [f"{record.session_id}.json"]
