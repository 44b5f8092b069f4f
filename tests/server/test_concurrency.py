"""Every call runs in its own task: 8 calls overlap; ``--max-concurrent-runs 2`` queues a third, which starts no
child until a slot frees and, cancelled while queued, starts nothing and gets no response."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.server._helpers import SERVE_TIMEOUT_S, RawServer, acp_entry, fake_agents, write_config

pytestmark = pytest.mark.anyio

_POLL_S = 0.05
_OBSERVE_S = 1.0


async def until_agents(server: RawServer, count: int) -> None:
    """Poll the OS until exactly ``count`` fake agents live (callers bound this)."""
    while True:
        if len(fake_agents(server.process.pid)) == count:
            return
        await anyio.sleep(_POLL_S)


async def most_agents_during(server: RawServer, seconds: float) -> int:
    """The largest number of live fake agents seen while sampling for ``seconds``."""
    most = 0
    with anyio.move_on_after(seconds):
        while True:
            most = max(most, len(fake_agents(server.process.pid)))
            await anyio.sleep(_POLL_S)
    return most


async def call_hang(server: RawServer, request_id: int) -> None:
    await server.request(request_id, "tools/call", {"name": "delegate_hang", "arguments": {"task": "x"}})


async def cancel(server: RawServer, request_id: int) -> None:
    await server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}})


async def test_eight_concurrent_calls_run_at_once(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"hang": acp_entry(MOCK_HANG="1")})
    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with RawServer.open(config) as server:
            await server.initialize()
            for request_id in range(1, 9):
                await call_hang(server, request_id)
            await until_agents(server, 8)
            for request_id in range(1, 9):
                await cancel(server, request_id)
            await until_agents(server, 0)
            await server.request("ping", "ping")
            pong = await server.response_to("ping")
    assert pong["result"] == {}
    assert [server.responses_for(request_id) for request_id in range(1, 9)] == [[]] * 8


async def test_a_queued_call_starts_nothing_and_cancelled_while_queued_gets_no_response(tmp_path: Path) -> None:
    # One-shot: a cancelled call's child goes down (a session would keep a settled child warm).
    config = write_config(tmp_path, {"hang": {**acp_entry(MOCK_HANG="1"), "session_idle_ms": 0}})
    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with RawServer.open(config, "--max-concurrent-runs", "2") as server:
            await server.initialize()
            for request_id in (1, 2, 3):
                await call_hang(server, request_id)
            await until_agents(server, 2)
            while_full = await most_agents_during(server, _OBSERVE_S)
            await cancel(server, 3)  # still queued
            await cancel(server, 1)  # frees a slot
            await until_agents(server, 1)
            after_free = await most_agents_during(server, _OBSERVE_S)
            await cancel(server, 2)
            await until_agents(server, 0)
            await server.request("ping", "ping")
            await server.response_to("ping")
    assert while_full == 2
    # The freed slot went to nobody: the cancelled queued call never started a child.
    assert after_free == 1
    assert [server.responses_for(request_id) for request_id in (1, 2, 3)] == [[], [], []]
