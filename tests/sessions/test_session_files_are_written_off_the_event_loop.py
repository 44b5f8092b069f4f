"""A turn's session file is written (and fsynced) from a worker thread: the event loop never waits on the disk.

The file is still whole and current when the call returns, and a ``close`` that lands while the turn's write is in
flight is not overwritten by the turn's older copy.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import anyio
import pytest

from host import CancelController, Host, RunHooks
from tests.sessions._helpers import PROCESS_TIMEOUT_S, session_config, session_entry

pytestmark = pytest.mark.anyio


async def test_a_turns_session_file_is_fsynced_off_the_event_loop_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop_thread = threading.get_ident()
    fsync_threads: list[int] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        fsync_threads.append(threading.get_ident())
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    config = session_config(tmp_path, acp=session_entry(tmp_path, idle_ms=0))
    state = tmp_path / "state"
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            result = await host.execute("delegate_acp", {"task": "hello"}, signal=CancelController().signal)
            session_id = result.to_json()["value"]["session_id"]
            # Written before the call returned.
            record = json.loads((state / "sessions" / f"{session_id}.json").read_text(encoding="utf-8"))
    assert (record["turns"], record["state"]) == (1, "cold")
    assert fsync_threads
    assert loop_thread not in fsync_threads


async def test_a_close_during_the_turns_write_is_what_the_file_keeps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = session_config(tmp_path, acp=session_entry(tmp_path, idle_ms=0))
    state = tmp_path / "state"
    writing = threading.Event()
    closed = threading.Event()
    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:
        if threading.current_thread() is not threading.main_thread() and not writing.is_set():
            writing.set()
            closed.wait(PROCESS_TIMEOUT_S)  # the turn's copy lands after the close's own write
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", slow_fsync)
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            ids: list[str] = []
            signal = CancelController().signal

            async def turn() -> None:
                await host.execute(
                    "delegate_acp", {"task": "hello"}, signal=signal, hooks=RunHooks(on_session=ids.append)
                )

            async with anyio.create_task_group() as group:
                group.start_soon(turn)
                assert await anyio.to_thread.run_sync(writing.wait, PROCESS_TIMEOUT_S)
                close = await host.execute("session_close", {"session_id": ids[0]}, signal=signal)
                closed.set()
                assert close.to_json()["is_error"] is False, close.to_json()
    record = json.loads((state / "sessions" / f"{ids[0]}.json").read_text(encoding="utf-8"))
    assert record["state"] == "closed"
