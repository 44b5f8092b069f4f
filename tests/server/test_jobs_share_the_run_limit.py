"""Through ``serve`` and the official client: ``--max-concurrent-runs 2`` holds six background jobs to two live
children, lists the waiting ones ``queued`` (``job_list``, ``job_output``), and ``job_kill`` on a queued job settles
it ``killed`` without starting a child."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import mcp_types as types
import pytest

from tests.server._helpers import (
    SERVE_TIMEOUT_S,
    acp_entry,
    client_session,
    most_fake_agents,
    until_fake_agents,
    write_config,
)
from tests.snapshots import scrub_run_ids, scrub_session_ids

pytestmark = pytest.mark.anyio

_OBSERVE_S = 1.0


def text_of(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


async def until_agents(count: int) -> None:
    await until_fake_agents(os.getpid(), count)


async def most_agents_during(seconds: float) -> int:
    return await most_fake_agents(os.getpid(), seconds)


async def test_six_jobs_under_max_concurrent_runs_two(tmp_path: Path) -> None:
    spawned = tmp_path / "initialized.log"
    # One-shot: a killed job's child goes down (a session would keep a child that settled the cancel warm).
    config = write_config(
        tmp_path, {"hang": {**acp_entry(MOCK_HANG="1", MOCK_RECORD_INIT=str(spawned)), "session_idle_ms": 0}}
    )
    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with client_session(config, "--max-concurrent-runs", "2") as session:
            ids: list[str] = []
            for n in range(6):
                started = await session.call_tool(
                    "delegate_hang", {"task": f"job {n}", "label": f"job {n}", "run_in_background": True}
                )
                assert started.structured_content is not None
                ids.append(str(started.structured_content["job_id"]))
            await until_agents(2)
            while_full = await most_agents_during(_OBSERVE_S)
            listing = text_of(await session.call_tool("job_list", {}))
            queued_read = text_of(await session.call_tool("job_output", {"job_id": ids[5]}))
            killed = text_of(await session.call_tool("job_kill", {"job_id": ids[5]}))
            after_kill = text_of(await session.call_tool("job_output", {"job_id": ids[5], "wait": True}))
            # The queued ones first, so no freed slot lets one of them start.
            for job_id in [*ids[2:5], *ids[:2]]:
                await session.call_tool("job_kill", {"job_id": job_id})
            for job_id in ids[:5]:
                await session.call_tool("job_output", {"job_id": job_id, "wait": True})
            drained = await most_agents_during(_OBSERVE_S)
    assert while_full == 2
    assert scrub_run_ids(listing).splitlines() == [
        f"{ids[0]} [subagent] running — job 0 [run: <run_id>]",
        f"{ids[1]} [subagent] running — job 1 [run: <run_id>]",
        *(f"{ids[n]} [subagent] queued — job {n} [run: <run_id>]" for n in range(2, 6)),
    ]
    assert scrub_session_ids(queued_read) == "(no new output)\n[session: <session_id>]\n[status: queued]"
    assert killed == f"requested cancellation of job {ids[5]}"
    assert scrub_session_ids(after_kill) == "(no new output)\n[session: <session_id>]\n[status: killed]"
    assert drained == 0
    # Only the two that held a slot ever started a child.
    assert len(spawned.read_text().splitlines()) == 2
