"""Every session file a host writes (a turn's end, ``session_close``, going cold when idle, an eviction, the host
closing, a worktree session's first worktree) is written and fsynced from a worker thread, so the event loop never
waits on the disk; and the writes of one session land in the order they were asked for.

The file is still whole and current when the call that changed it returns, and a ``close`` asked for while the
turn's write is in flight lands after it (the file never says ``closed`` and then something else).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from host import CancelController, Host, RunHooks
from host.config._loader import parse_config
from tests.sessions._helpers import PROCESS_TIMEOUT_S, session_config, session_entry, wait_until
from tests.workspace._helpers import make_repo

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


class _SessionWrites:
    """Every fsync of a session file in this process: ``(thread ident, the state the file holds)``, in order.

    ``os.fsync`` is wrapped (then called): a write of a session file is recognised by its temporary file's path
    under ``<state>/sessions/``; ``hold`` makes the first such write from a worker thread wait until released.
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, hold: bool = False) -> None:
        self.writes: list[tuple[int, str]] = []
        self.held = threading.Event()
        self.release = threading.Event()
        self._hold = hold
        real_fsync = os.fsync

        def observing_fsync(fd: int) -> None:
            path = os.readlink(f"/proc/self/fd/{fd}")
            if "/sessions/." in path:
                state = json.loads(Path(path).read_bytes())["state"]  # whole before its fsync (a write-only fd)
                on_worker = threading.current_thread() is not threading.main_thread()
                if self._hold and on_worker and not self.held.is_set():
                    self.held.set()
                    self.release.wait(PROCESS_TIMEOUT_S)
                self.writes.append((threading.get_ident(), state))
            real_fsync(fd)

        monkeypatch.setattr(os, "fsync", observing_fsync)

    def states(self) -> list[str]:
        return [state for _thread, state in self.writes]

    def on_the_loop(self, loop_thread: int) -> list[str]:
        return [state for thread, state in self.writes if thread == loop_thread]


def _file_state(state: Path, session_id: str) -> str:
    return json.loads((state / "sessions" / f"{session_id}.json").read_text(encoding="utf-8"))["state"]


async def _turn(host: Host, arguments: dict[str, Any], tool: str = "delegate_acp") -> str:
    result = await host.execute(tool, arguments, signal=CancelController().signal)
    data = result.to_json()
    assert data["is_error"] is False, data
    return data["value"]["session_id"]


async def _close(host: Host, session_id: str) -> None:
    result = await host.execute("session_close", {"session_id": session_id}, signal=CancelController().signal)
    assert result.to_json()["is_error"] is False, result.to_json()


async def _close_a_warm_session(host: Host, state: Path) -> list[str]:
    session_id = await _turn(host, {"task": "hello"})
    await _close(host, session_id)
    assert _file_state(state, session_id) == "closed"  # written before session_close returned
    return ["warm", "closed"]


async def _let_a_session_go_cold(host: Host, state: Path) -> list[str]:
    session_id = await _turn(host, {"task": "hello"}, "delegate_brief")
    await wait_until(lambda: _file_state(state, session_id) == "cold")
    return ["warm", "cold"]


async def _evict_a_session(host: Host, state: Path) -> list[str]:
    first = await _turn(host, {"task": "one"})
    second = await _turn(host, {"task": "two"})  # max_warm_sessions = 1: the first goes cold first
    assert (_file_state(state, first), _file_state(state, second)) == ("cold", "warm")
    return ["warm", "cold", "warm", "cold"]  # the last: the host closing


_SCENARIOS: dict[str, Callable[[Host, Path], Any]] = {
    "session_close": _close_a_warm_session,
    "idle": _let_a_session_go_cold,
    "eviction": _evict_a_session,
}


@pytest.mark.parametrize("scenario", [*_SCENARIOS, "host_close"])
async def test_every_session_file_write_is_fsynced_off_the_event_loop_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scenario: str
) -> None:
    loop_thread = threading.get_ident()
    observed = _SessionWrites(monkeypatch)
    config = session_config(
        tmp_path,
        {"max_warm_sessions": 1},
        acp=session_entry(tmp_path, idle_ms=600000),
        brief=session_entry(tmp_path, idle_ms=200),
    )
    state = tmp_path / "state"
    session_id = ""
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            if scenario == "host_close":
                session_id = await _turn(host, {"task": "hello"})
                expected = ["warm", "cold"]
            else:
                expected = await _SCENARIOS[scenario](host, state)
        if scenario == "host_close":
            assert _file_state(state, session_id) == "cold"  # written before the host's close returned
    assert observed.states() == expected
    assert observed.on_the_loop(loop_thread) == []


async def test_a_worktree_sessions_first_worktree_is_written_off_the_event_loop_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop_thread = threading.get_ident()
    observed = _SessionWrites(monkeypatch)
    repo = make_repo(tmp_path / "repo")
    entry = {**session_entry(tmp_path, idle_ms=0), "cwd": str(repo), "workspace": "worktree"}
    config = parse_config({"providers": {"acp": entry}})
    state = tmp_path / "state"
    with anyio.fail_after(PROCESS_TIMEOUT_S * 2):
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            await _turn(host, {"task": "hello"})
    # The worktree's facts as soon as the session held it (still "cold": no turn ended), then the turn's end.
    assert observed.states() == ["cold", "cold"]
    assert observed.on_the_loop(loop_thread) == []


async def test_a_close_asked_for_during_the_turns_write_lands_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop_thread = threading.get_ident()
    observed = _SessionWrites(monkeypatch, hold=True)
    config = session_config(tmp_path, acp=session_entry(tmp_path, idle_ms=0))
    state = tmp_path / "state"
    signal = CancelController().signal
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            ids: list[str] = []
            closed_file: list[str] = []

            async def turn() -> None:
                await host.execute(
                    "delegate_acp", {"task": "hello"}, signal=signal, hooks=RunHooks(on_session=ids.append)
                )

            async def close() -> None:
                await _close(host, ids[0])
                closed_file.append(_file_state(state, ids[0]))

            async with anyio.create_task_group() as group:
                group.start_soon(turn)
                assert await anyio.to_thread.run_sync(observed.held.wait, PROCESS_TIMEOUT_S)
                group.start_soon(close)
                while True:  # the close marked the session and waits for the turn's write
                    listing = await host.execute("session_list", {}, signal=signal)
                    if "closed" in listing.to_json()["content"][0]["text"]:
                        break
                    await anyio.sleep(0.01)
                observed.release.set()  # the close queued for the file before it showed "closed" (no await between)
    assert observed.states() == ["cold", "closed"]
    assert closed_file == ["closed"]
    assert observed.on_the_loop(loop_thread) == []
    assert _file_state(state, ids[0]) == "closed"
