"""Cancel keeps the session (docs/behaviour.md#sessions): a caller cancel or TOOL_TIMEOUT during a turn sends
``session/cancel``, the agent's ``cancelled`` answer settles the turn ``aborted`` with its partial output, the record
says ``interrupted: true``, and the same child serves the next turn, whose answer shows the earlier turn was kept.
An agent that does not settle within ``dispose_eof_grace_ms`` gets the ladder, and its session goes cold."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from host import CancelController, ChunkFrame, Host, RunHooks, StreamFrame, TextDelta, ToolResult
from tests.records._helpers import read_jsonl
from tests.sessions._helpers import (
    PROCESS_TIMEOUT_S,
    echo_of,
    live_agents,
    session_config,
    session_entry,
    session_log,
    text_of,
    wait_for_log,
)

pytestmark = pytest.mark.anyio


async def test_cancel_mid_turn_then_continue_on_the_same_child_with_the_prefix_kept(tmp_path: Path) -> None:
    state = tmp_path / "state"
    config = session_config(tmp_path, acp=session_entry(tmp_path, MOCK_HANG_ON="slow"))
    signal = CancelController().signal
    results: list[ToolResult] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            first = await host.execute("delegate_acp", {"task": "read the code"}, signal=signal)
            session_id = first.to_json()["value"]["session_id"]
            controller = CancelController()
            streamed = anyio.Event()

            def on_frame(frame: StreamFrame) -> None:
                if isinstance(frame, ChunkFrame) and isinstance(frame.chunk, TextDelta) and frame.chunk.text:
                    streamed.set()

            async with anyio.create_task_group() as group:

                async def cancelled_turn() -> None:
                    arguments = {"task": "slow analysis", "session_id": session_id}
                    hooks = RunHooks(on_frame=on_frame)
                    results.append(await host.execute("delegate_acp", arguments, signal=controller.signal, hooks=hooks))

                group.start_soon(cancelled_turn)
                await wait_for_log(tmp_path, "prompt", 2)
                await streamed.wait()  # the answer's chunk has streamed
                controller.cancel("parent changed its mind")
            third = await host.execute("delegate_acp", {"task": "summarise", "session_id": session_id}, signal=signal)
    (cancelled,) = results
    first_pid = echo_of(first)[0]
    third_pid, third_tasks = echo_of(third)
    assert text_of(cancelled).startswith("Error: subagent run was cancelled\nPartial output before the run ended:\n")
    assert f"pid={first_pid}" in text_of(cancelled)
    agent_session = session_log(tmp_path)[0].split()[1]
    assert session_log(tmp_path) == [
        f"new {agent_session}",
        f"prompt {agent_session}",
        f"prompt {agent_session}",
        f"cancel {agent_session}",
        f"prompt {agent_session}",
    ]
    assert third_pid == first_pid
    assert third_tasks == ["read the code", "slow analysis", "summarise"]
    runs = sorted((state / "runs").glob("*.jsonl"), key=lambda path: path.stat().st_mtime)
    turns = [read_jsonl(path) for path in runs]
    by_turn = {next(r["data"]["turn"] for r in records if r["type"] == "run/start"): records for records in turns}
    message = next(r["data"] for r in by_turn[2] if r["type"] == "assistant/message")
    assert message["interrupted"] is True
    assert next(r["data"] for r in by_turn[2] if r["type"] == "run/end")["stop_reason"] == "aborted"


async def test_a_tool_timeout_keeps_the_session_warm(tmp_path: Path) -> None:
    entry = {**session_entry(tmp_path, MOCK_HANG_ON="slow"), "timeout_ms": 1500}
    config = session_config(tmp_path, acp=entry)
    signal = CancelController().signal
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            first = await host.execute("delegate_acp", {"task": "start"}, signal=signal)
            session_id = first.to_json()["value"]["session_id"]
            timed_out = await host.execute("delegate_acp", {"task": "slow", "session_id": session_id}, signal=signal)
            after = await host.execute("delegate_acp", {"task": "after", "session_id": session_id}, signal=signal)
    assert text_of(timed_out) == "Error: tool call timed out after 1500ms"
    assert echo_of(after) == (echo_of(first)[0], ["start", "slow", "after"])
    assert [line.split()[0] for line in session_log(tmp_path)] == ["new", "prompt", "prompt", "cancel", "prompt"]


async def test_an_agent_that_does_not_settle_the_cancel_gets_the_ladder_and_the_session_resumes_cold(
    tmp_path: Path,
) -> None:
    entry = session_entry(tmp_path, MOCK_HANG_ON="slow", MOCK_IGNORE_CANCEL="1", MOCK_SESSION_RESUME="1")
    config = session_config(tmp_path, acp=entry)
    signal = CancelController().signal
    controller = CancelController()
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            first = await host.execute("delegate_acp", {"task": "start"}, signal=signal)
            session_id = first.to_json()["value"]["session_id"]
            async with anyio.create_task_group() as group:

                async def stuck_turn() -> None:
                    arguments = {"task": "slow", "session_id": session_id}
                    await host.execute("delegate_acp", arguments, signal=controller.signal)

                group.start_soon(stuck_turn)
                await wait_for_log(tmp_path, "prompt", 2)
                controller.cancel("stop")
            alive_after_cancel = [proc.pid for proc in live_agents()]
            after = await host.execute("delegate_acp", {"task": "after", "session_id": session_id}, signal=signal)
    first_pid = echo_of(first)[0]
    after_pid, after_tasks = echo_of(after)
    assert first_pid not in alive_after_cancel
    assert after_pid != first_pid and after_tasks == ["start", "slow", "after"]
    assert [line.split()[0] for line in session_log(tmp_path)] == [
        "new",
        "prompt",
        "prompt",
        "cancel",
        "resume",
        "prompt",
    ]
