"""Reading every session file (the TTL sweep when a host opens, ``session_list``) happens in a worker thread, so a
state directory of thousands of sessions never stalls the calls the host serves; the sweep still removes exactly
the expired files, and ``session_list`` still shows every kept session."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import anyio
import pytest

from host import CancelController, Host
from host.sessions._store import SessionRecord, new_session_id, write_session_file
from tests.sessions._helpers import PROCESS_TIMEOUT_S, session_config, wait_until

pytestmark = pytest.mark.anyio


class _ListingThreads:
    """The thread of every listing of ``<state>/sessions`` in this process (``os.listdir`` wrapped, then called)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, sessions: Path) -> None:
        self.threads: list[int] = []
        real_listdir = os.listdir

        def observing_listdir(path: str | os.PathLike[str] = ".") -> list[str]:
            if Path(path) == sessions:
                self.threads.append(threading.get_ident())
            return real_listdir(path)

        monkeypatch.setattr(os, "listdir", observing_listdir)


def _session(state: Path, last_used: str) -> str:
    record = SessionRecord(
        session_id=new_session_id(), provider="acp", kind="acp", created=last_used, last_used=last_used, state="cold"
    )
    write_session_file(state, record)
    return record.session_id


async def test_the_ttl_sweep_reads_the_session_files_in_a_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    expired = _session(state, "2020-01-01T00:00:00.000Z")
    kept = _session(state, "2999-01-01T00:00:00.000Z")
    listings = _ListingThreads(monkeypatch, state / "sessions")
    loop_thread = threading.get_ident()
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(session_config(tmp_path), parent_cwd=str(tmp_path), state_dir=state):
            await wait_until(lambda: not (state / "sessions" / f"{expired}.json").exists())
    assert (state / "sessions" / f"{kept}.json").exists()
    assert listings.threads
    assert loop_thread not in listings.threads


async def test_session_list_reads_the_session_files_in_a_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    kept = [_session(state, "2999-01-01T00:00:00.000Z") for _ in range(3)]
    loop_thread = threading.get_ident()
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(session_config(tmp_path), parent_cwd=str(tmp_path), state_dir=state) as host:
            listings = _ListingThreads(monkeypatch, state / "sessions")
            listed = await host.execute("session_list", {}, signal=CancelController().signal)
    text = listed.to_json()["value"]
    assert all(session_id in text for session_id in kept)
    assert listings.threads
    assert loop_thread not in listings.threads
