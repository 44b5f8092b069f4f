"""Cancellation through the official client's API (EOF-ignoring and SIGTERM-trapping children, with grandchildren),
no response on the wire for a cancelled id, and the entry's TOOL_TIMEOUT: each leaves no child behind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import psutil
import pytest
from mcp import ClientSession

from tests._provider_helpers import wait_for_ready_marker, wait_until_gone
from tests.server._helpers import SERVE_TIMEOUT_S, RawServer, acp_entry, client_session, fake_agents, write_config

pytestmark = pytest.mark.anyio

# The entries' ladder is EOF 500 ms + TERM 1000 ms; the rest is slack for a loaded box.
LADDER_BOUND_S = 1.5 + 2.0


def hanging_entry(tmp_path: Path, name: str, **env: str) -> dict[str, Any]:
    entry = acp_entry(
        MOCK_HANG="1",
        MOCK_READY_FILE=str(tmp_path / f"{name}.ready"),
        MOCK_GRANDCHILD_PID_FILE=str(tmp_path / f"{name}.grandchild"),
        **env,
    )
    # A client's cancel climbs the entry's own ladder (serve caps graces only once it is shutting down).
    entry["dispose_eof_grace_ms"] = 500
    entry["dispose_grace_ms"] = 1000
    entry["session_idle_ms"] = 0  # one-shot: a cancel climbs the ladder (a session would keep a settled child warm)
    return entry


def text_of(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


async def cancel_while_running(session: ClientSession, tmp_path: Path, name: str) -> float:
    """Cancel a call to ``delegate_<name>`` through the client once its child is ready; the teardown's duration."""
    agent = grandchild = 0
    cancelled_at = 0.0
    async with anyio.create_task_group() as group:

        async def call() -> None:
            await session.call_tool(f"delegate_{name}", {"task": "x"})

        group.start_soon(call)
        await wait_for_ready_marker(tmp_path / f"{name}.ready")
        grandchild = int((tmp_path / f"{name}.grandchild").read_text())
        agent = psutil.Process(grandchild).ppid()
        cancelled_at = anyio.current_time()
        group.cancel_scope.cancel()
    await wait_until_gone(agent)
    await wait_until_gone(grandchild)
    return anyio.current_time() - cancelled_at


async def test_client_cancellation_tears_the_child_down_through_the_ladder_and_the_next_call_succeeds(
    tmp_path: Path,
) -> None:
    sigterm_file = tmp_path / "sigterm"
    config = write_config(
        tmp_path,
        {
            "echo": acp_entry(),
            "deaf": hanging_entry(tmp_path, "deaf", MOCK_IGNORE_EOF="1", MOCK_SIGTERM_FILE=str(sigterm_file)),
            "trap": hanging_entry(tmp_path, "trap", MOCK_TRAP_SIGTERM="1"),
            "slow": {**acp_entry(MOCK_HANG="1"), "timeout_ms": 300, "session_idle_ms": 0},
        },
    )
    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with client_session(config) as session:
            server = next(p for p in psutil.Process().children() if "serve" in p.cmdline())
            deaf_s = await cancel_while_running(session, tmp_path, "deaf")
            trap_s = await cancel_while_running(session, tmp_path, "trap")
            timed_out = await session.call_tool("delegate_slow", {"task": "x"})
            left_after_timeout = fake_agents(server.pid)
            after = await session.call_tool("delegate_echo", {"task": "after the cancels"})
    assert deaf_s < LADDER_BOUND_S and trap_s < LADDER_BOUND_S
    # The EOF-deaf child got as far as the TERM rung; the trapping one needed the KILL rung.
    assert sigterm_file.exists()
    assert text_of(timed_out) == "Error: tool call timed out after 300ms" and timed_out.is_error
    assert left_after_timeout == []
    assert text_of(after) == "after the cancels" and not after.is_error


async def test_a_cancelled_call_gets_no_response_on_the_wire(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"echo": acp_entry(), "hang": hanging_entry(tmp_path, "hang")})
    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with RawServer.open(config) as server:
            await server.initialize()
            await server.request(7, "tools/call", {"name": "delegate_hang", "arguments": {"task": "x"}})
            await wait_for_ready_marker(tmp_path / "hang.ready")
            grandchild = int((tmp_path / "hang.grandchild").read_text())
            agent = psutil.Process(grandchild).ppid()
            await server.send(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": "x"}}
            )
            await wait_until_gone(agent)
            await wait_until_gone(grandchild)
            await server.request(8, "tools/call", {"name": "delegate_echo", "arguments": {"task": "next"}})
            answer = await server.response_to(8)
            await server.close_stdin()
            assert await server.process.wait() == 0
    assert answer["result"]["content"] == [{"type": "text", "text": "next"}]
    assert server.responses_for(7) == []
