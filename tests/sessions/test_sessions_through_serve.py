"""Sessions through ``serve`` and the official MCP client (docs/behaviour.md#sessions): the ``session_id`` in
``structuredContent`` reaches the same child with its context; a client cancel mid-turn keeps the session, and the
next call shows the cancelled turn was kept; ``session_list`` and ``session_close`` are MCP tools."""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp_types as types
import psutil
import pytest

from host.sessions import is_session_id
from tests.server._helpers import SERVE_TIMEOUT_S, client_session, fake_agents, write_config
from tests.sessions._helpers import session_entry, session_log, wait_for_log

pytestmark = pytest.mark.anyio


def text_of(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


async def test_the_official_client_continues_a_session_and_a_cancel_keeps_it(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"agent": session_entry(tmp_path, MOCK_HANG_ON="slow")})
    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with client_session(config) as session:
            server = next(p for p in psutil.Process().children() if "serve" in p.cmdline())
            first = await session.call_tool("delegate_agent", {"task": "read the code"})
            assert first.structured_content is not None
            session_id = first.structured_content["session_id"]
            second = await session.call_tool("delegate_agent", {"task": "explain it", "session_id": session_id})
            async with anyio.create_task_group() as group:

                async def cancelled_call() -> None:
                    await session.call_tool("delegate_agent", {"task": "slow dive", "session_id": session_id})

                group.start_soon(cancelled_call)
                await wait_for_log(tmp_path, "prompt", 3)  # the agent has the turn: cancel it mid-turn
                group.cancel_scope.cancel()
            third = await session.call_tool("delegate_agent", {"task": "summarise", "session_id": session_id})
            listed = await session.call_tool("session_list", {})
            warm = len(fake_agents(server.pid))
            closed = await session.call_tool("session_close", {"session_id": session_id})
    assert is_session_id(session_id)
    assert second.structured_content is not None and second.structured_content["session_id"] == session_id
    assert third.structured_content is not None and third.structured_content["session_id"] == session_id
    pid = text_of(first).split()[0]
    assert text_of(second) == f"{pid} session=1 tasks=read the code | explain it"
    assert text_of(third) == f"{pid} session=1 tasks=read the code | explain it | slow dive | summarise"
    methods = [line.split()[0] for line in session_log(tmp_path)]
    assert methods == ["new", "prompt", "prompt", "prompt", "cancel", "prompt"]
    assert text_of(listed).startswith(f"{session_id} [agent] warm, 4 turns, last used ")
    assert warm == 1
    assert text_of(closed) == f"closed session {session_id}"
