"""Lifetimes (docs/behaviour.md#sessions): ``[host] max_warm_sessions`` bounds the live children (the least recently
used idle session goes cold), ``session_idle_ms`` takes an idle child down, closing a ``Host`` leaves no child and
keeps its sessions resumable, and ``session_close`` ends a session for good."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from host import CancelController, Host
from tests._provider_helpers import wait_until_gone
from tests.sessions._helpers import (
    PROCESS_TIMEOUT_S,
    echo_of,
    live_agents,
    session_config,
    session_entry,
    text_of,
)

pytestmark = pytest.mark.anyio


async def _settled_agent_count() -> int:
    """The live agents once the children going cold finished their ladder (bounded by the caller)."""
    previous = -1
    while True:
        count = len(live_agents())
        if count == previous:
            return count
        previous = count
        await anyio.sleep(0.3)


async def test_twenty_sessions_with_max_warm_eight_keep_at_most_eight_children(tmp_path: Path) -> None:
    signal = CancelController().signal
    config = session_config(tmp_path, {"max_warm_sessions": 8}, acp=session_entry(tmp_path))
    most = 0
    sessions: list[str] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S * 4):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            for index in range(20):
                result = await host.execute("delegate_acp", {"task": f"task {index}"}, signal=signal)
                sessions.append(result.to_json()["value"]["session_id"])
                most = max(most, len(live_agents()))
            settled = await _settled_agent_count()
            # The newest session is still warm; the oldest went cold and resumes on its next turn.
            newest = await host.execute("delegate_acp", {"task": "again", "session_id": sessions[-1]}, signal=signal)
    assert most <= 8
    assert settled == 8
    assert echo_of(newest)[1] == ["task 19", "again"]


async def test_a_short_idle_time_leaves_no_child_after_it_passes(tmp_path: Path) -> None:
    signal = CancelController().signal
    config = session_config(tmp_path, acp=session_entry(tmp_path, idle_ms=300, MOCK_SESSION_RESUME="1"))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            first = await host.execute("delegate_acp", {"task": "one"}, signal=signal)
            warm_right_after = len(live_agents())
            with anyio.move_on_after(10):  # the 300 ms idle time, then the ladder; bounded, not a blind sleep
                await wait_until_gone(echo_of(first)[0])
            after_idle = len(live_agents())
            arguments = {"task": "two", "session_id": first.to_json()["value"]["session_id"]}
            second = await host.execute("delegate_acp", arguments, signal=signal)
    assert (warm_right_after, after_idle) == (1, 0)
    assert echo_of(second)[1] == ["one", "two"] and echo_of(second)[0] != echo_of(first)[0]


async def test_closing_the_host_leaves_no_child_and_a_new_host_resumes_the_session(tmp_path: Path) -> None:
    signal = CancelController().signal
    state = tmp_path / "state"
    config = session_config(tmp_path, acp=session_entry(tmp_path, MOCK_SESSION_RESUME="1"))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            first = await host.execute("delegate_acp", {"task": "one"}, signal=signal)
            warm = len(live_agents())
        after_close = len(live_agents())
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            arguments = {"task": "two", "session_id": first.to_json()["value"]["session_id"]}
            second = await host.execute("delegate_acp", arguments, signal=signal)
    assert (warm, after_close) == (1, 0)
    assert echo_of(second)[1] == ["one", "two"]


async def test_a_closed_session_ends_session_expired_and_its_child_goes_down(tmp_path: Path) -> None:
    signal = CancelController().signal
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(session_config(tmp_path), parent_cwd=str(tmp_path)) as host:
            first = await host.execute("delegate_acp", {"task": "one"}, signal=signal)
            session_id = first.to_json()["value"]["session_id"]
            closed = await host.execute("session_close", {"session_id": session_id}, signal=signal)
            gone = await _settled_agent_count()
            again = await host.execute("delegate_acp", {"task": "two", "session_id": session_id}, signal=signal)
            reopened = await host.execute(
                "delegate_acp", {"task": "three", "session_id": session_id, "if_lost": "new"}, signal=signal
            )
            unknown = await host.execute("session_close", {"session_id": "nope"}, signal=signal)
            listed = await host.execute("session_list", {}, signal=signal)
    assert text_of(closed) == f"closed session {session_id}"
    assert gone == 0
    expected = "Error: subagent-acp: Subagent failure (provider: ACP; stage: resume; category: session-expired)"
    assert text_of(again) == expected
    assert reopened.to_json()["value"]["context_reset"] is True and echo_of(reopened)[1] == ["three"]
    assert text_of(unknown) == "Error: unknown session nope"
    assert text_of(listed).startswith(f"{session_id} [acp] warm, 2 turns, last used ")


async def test_a_busy_session_serves_its_turns_one_at_a_time_in_order(tmp_path: Path) -> None:
    signal = CancelController().signal
    answers: list[list[str]] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(session_config(tmp_path), parent_cwd=str(tmp_path)) as host:
            first = await host.execute("delegate_acp", {"task": "t0"}, signal=signal)
            session_id = first.to_json()["value"]["session_id"]
            async with anyio.create_task_group() as group:
                for index in range(1, 4):

                    async def turn(task: str = f"t{index}") -> None:
                        result = await host.execute(
                            "delegate_acp", {"task": task, "session_id": session_id}, signal=signal
                        )
                        answers.append(echo_of(result)[1])

                    group.start_soon(turn)
                    await anyio.sleep(0.05)
    assert answers == [["t0", "t1"], ["t0", "t1", "t2"], ["t0", "t1", "t2", "t3"]]
