"""``sessions close`` from another process (docs/behaviour.md#sessions-persistence): the host that holds the session
warm notices the closed file within ``CLOSE_CHECK_INTERVAL_S`` (one ``stat`` per idle warm session each sweep) and
takes the child cold (``session/close`` when advertised, then the ladder); a call on the session is refused as
closed at once, even before that sweep; and a turn that ends after the close never writes the file back open."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

import anyio
import mcp_types as types
import pytest

from host import CancelController, Host, ToolResult
from host.acp_provider._session import SESSION_CLOSE_TIMEOUT_S
from host.sessions import read_session_file, write_session_file
from host.sessions._watch import CLOSE_CHECK_INTERVAL_S
from tests._provider_helpers import wait_until_gone
from tests.cli._helpers import CONSOLE_SCRIPT, cli_env
from tests.server._helpers import SERVE_TIMEOUT_S, client_session, write_config
from tests.sessions._helpers import (
    PROCESS_TIMEOUT_S,
    echo_of,
    session_config,
    session_entry,
    session_log,
    text_of,
    wait_for_log,
)

pytestmark = pytest.mark.anyio

EXPIRED: Final = "Error: subagent-acp: Subagent failure (provider: ACP; stage: resume; category: session-expired)"
CLOSE_BOUND_S: Final = CLOSE_CHECK_INTERVAL_S + SESSION_CLOSE_TIMEOUT_S + 5.0
"""The reaper's check interval, the bounded ``session/close``, the ladder (300 ms graces) and a loaded box's slack."""


def _close_elsewhere(state: Path, session_id: str) -> None:
    """What ``subagent-host sessions close`` does to the file: read it, mark it closed, write it back."""
    record = read_session_file(state, session_id)
    assert record is not None
    record.state = "closed"
    write_session_file(state, record)


def _state_of(state: Path, session_id: str) -> str:
    record = read_session_file(state, session_id)
    assert record is not None
    return record.state


async def test_serve_takes_the_warm_child_down_after_sessions_close_in_another_process(tmp_path: Path) -> None:
    state = tmp_path / "state"
    config = write_config(tmp_path, {"agent": session_entry(tmp_path, MOCK_SESSION_CLOSE="1")})
    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with client_session(config, "--state-dir", str(state)) as session:
            first = await session.call_tool("delegate_agent", {"task": "read the code"})
            assert first.structured_content is not None
            session_id = first.structured_content["session_id"]
            (block,) = first.content
            assert isinstance(block, types.TextContent)
            match = re.match(r"pid=(\d+) ", block.text)
            assert match is not None, block.text
            warm_pid = int(match.group(1))
            closed = await anyio.run_process(
                [CONSOLE_SCRIPT, "sessions", "close", session_id, "--state-dir", str(state)],
                env=cli_env(),
                check=False,
            )
            assert closed.returncode == 0, closed.stderr
            with anyio.fail_after(CLOSE_BOUND_S):
                await wait_until_gone(warm_pid)
            later = await session.call_tool("delegate_agent", {"task": "go on", "session_id": session_id})
    assert closed.stdout.decode() == f"closed session {session_id}\n"
    agent_session = session_log(tmp_path)[0].split()[1]
    assert session_log(tmp_path) == [f"new {agent_session}", f"prompt {agent_session}", f"close {agent_session}"]
    assert later.is_error is True
    (refusal,) = later.content
    assert isinstance(refusal, types.TextContent) and refusal.text == EXPIRED
    assert _state_of(state, session_id) == "closed"


async def test_the_close_shows_at_once_a_call_is_refused_and_the_warm_child_goes_down(tmp_path: Path) -> None:
    signal = CancelController().signal
    state = tmp_path / "state"
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(session_config(tmp_path), parent_cwd=str(tmp_path), state_dir=state) as host:
            first = await host.execute("delegate_acp", {"task": "one"}, signal=signal)
            session_id = first.to_json()["value"]["session_id"]
            _close_elsewhere(state, session_id)
            listed = await host.execute("session_list", {}, signal=signal)
            refused = await host.execute("delegate_acp", {"task": "two", "session_id": session_id}, signal=signal)
            with anyio.fail_after(CLOSE_BOUND_S):
                await wait_until_gone(echo_of(first)[0])
    assert text_of(refused) == EXPIRED
    assert [line.split()[0] for line in session_log(tmp_path)] == ["new", "prompt"]
    assert text_of(listed).startswith(f"{session_id} [acp] closed, 1 turn, last used ")
    assert _state_of(state, session_id) == "closed"


async def test_a_turn_that_ends_after_the_close_leaves_the_file_closed_and_no_child(tmp_path: Path) -> None:
    signal = CancelController().signal
    state = tmp_path / "state"
    config = session_config(tmp_path, acp=session_entry(tmp_path, MOCK_HANG_ON="slow"))
    results: list[ToolResult] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            first = await host.execute("delegate_acp", {"task": "one"}, signal=signal)
            session_id = first.to_json()["value"]["session_id"]
            controller = CancelController()
            async with anyio.create_task_group() as group:

                async def busy_turn() -> None:
                    arguments = {"task": "slow two", "session_id": session_id}
                    results.append(await host.execute("delegate_acp", arguments, signal=controller.signal))

                group.start_soon(busy_turn)
                await wait_for_log(tmp_path, "prompt", 2)
                _close_elsewhere(state, session_id)  # while the turn runs
                controller.cancel("done waiting")  # the agent settles the cancel: the turn would keep the child
            with anyio.fail_after(CLOSE_BOUND_S):
                await wait_until_gone(echo_of(first)[0])
            closed_state = _state_of(state, session_id)
            later = await host.execute("delegate_acp", {"task": "three", "session_id": session_id}, signal=signal)
    assert text_of(results[0]).startswith("Error: subagent run was cancelled")
    assert [line.split()[0] for line in session_log(tmp_path)] == ["new", "prompt", "prompt", "cancel"]
    assert closed_state == "closed"
    assert text_of(later) == EXPIRED
