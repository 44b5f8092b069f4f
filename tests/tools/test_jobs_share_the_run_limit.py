"""Background jobs count against the host's run limit (``Host.open(max_concurrent_runs=...)``): with a limit of 2,
six jobs never have more than two children alive; a waiting job is ``queued`` in ``job_list`` and ``job_output``;
``job_kill`` on a queued job settles it ``killed`` without starting a child; a foreground call shares the limit."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from host import CancelController, Host, HostConfig, ToolResult
from host.config._loader import parse_config
from tests.conftest import FAKE_ACP_AGENT, PYTHON
from tests.server._helpers import most_fake_agents, until_fake_agents
from tests.snapshots import scrub_run_ids
from tests.tools._helpers import text_of

pytestmark = pytest.mark.anyio

TIMEOUT_S = 40
_OBSERVE_S = 1.0


def hang_config(tmp_path: Path, **extra_host: Any) -> tuple[HostConfig, Path]:
    """One hanging fake agent entry; every child that reaches ``initialize`` appends a line to the returned file."""
    spawned = tmp_path / "initialized.log"
    # One-shot: a killed job's child goes down (a session would keep a child that settled the cancel warm).
    entry: dict[str, Any] = {
        "session_idle_ms": 0,
        "kind": "acp",
        "command": PYTHON,
        "args": [str(FAKE_ACP_AGENT)],
        "env": {"MOCK_HANG": "1", "MOCK_RECORD_INIT": str(spawned)},
        "dispose_eof_grace_ms": 300,
        "dispose_grace_ms": 300,
    }
    return parse_config({"host": extra_host, "providers": {"hang": entry}}), spawned


def spawned_count(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


async def until_agents(count: int) -> None:
    await until_fake_agents(os.getpid(), count)


async def most_agents_during(seconds: float) -> int:
    return await most_fake_agents(os.getpid(), seconds)


async def call(host: Host, name: str, arguments: dict[str, Any]) -> str:
    result: ToolResult = await host.execute(name, arguments, signal=CancelController().signal)
    return text_of(result)


async def start_jobs(host: Host, count: int) -> list[str]:
    ids: list[str] = []
    for n in range(count):
        text = await call(host, "delegate_hang", {"task": f"job {n}", "label": f"job {n}", "run_in_background": True})
        ids.append(text.rsplit(" ", 1)[1])
    return ids


async def test_six_jobs_under_a_limit_of_two_never_run_more_than_two_children(tmp_path: Path) -> None:
    config, spawned = hang_config(tmp_path)
    with anyio.fail_after(TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path), max_concurrent_runs=2) as host:
            ids = await start_jobs(host, 6)
            await until_agents(2)
            while_full = await most_agents_during(_OBSERVE_S)
            listing = await call(host, "job_list", {})
            queued_read = await call(host, "job_output", {"job_id": ids[5]})
            running_read = await call(host, "job_output", {"job_id": ids[0]})
            # Killing a running job frees its slot for the oldest queued one.
            await call(host, "job_kill", {"job_id": ids[0]})
            assert (await host.wait_job(ids[0])).status == "killed"
            await until_agents(2)
            after_free = await most_agents_during(_OBSERVE_S)
            third_listed = await call(host, "job_list", {})
    assert while_full == 2
    assert after_free == 2
    assert scrub_run_ids(listing).splitlines() == [
        f"{ids[0]} [subagent] running — job 0 [run: <run_id>]",
        f"{ids[1]} [subagent] running — job 1 [run: <run_id>]",
        *(f"{ids[n]} [subagent] queued — job {n} [run: <run_id>]" for n in range(2, 6)),
    ]
    assert queued_read == "(no new output)\n[session: <session_id>]\n[status: queued]"
    assert running_read == "(no new output)\n[session: <session_id>]\n[status: running]"
    assert f"{ids[2]} [subagent] running — job 2 [run: <run_id>]" in scrub_run_ids(third_listed).splitlines()
    assert f"{ids[3]} [subagent] queued — job 3 [run: <run_id>]" in scrub_run_ids(third_listed).splitlines()
    # Closing the host killed the queued jobs before they ever spawned: only the three that ran reached initialize.
    assert spawned_count(spawned) == 3


async def test_job_kill_on_a_queued_job_starts_no_child(tmp_path: Path) -> None:
    config, spawned = hang_config(tmp_path, max_concurrent_runs=1)
    with anyio.fail_after(TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            running, queued = await start_jobs(host, 2)
            await until_agents(1)
            confirmation = await call(host, "job_kill", {"job_id": queued})
            outcome = await host.wait_job(queued)
            read = await call(host, "job_output", {"job_id": queued})
            # The slot the killed queued job never took is still held by the running one; free it and watch.
            await call(host, "job_kill", {"job_id": running})
            await host.wait_job(running)
            after = await most_agents_during(_OBSERVE_S)
    assert confirmation == f"requested cancellation of job {queued}"
    assert outcome.status == "killed"
    assert read == "(no new output)\n[session: <session_id>]\n[status: killed]"
    assert after == 0
    assert spawned_count(spawned) == 1


async def test_a_foreground_call_waits_for_a_slot_a_job_holds(tmp_path: Path) -> None:
    config, spawned = hang_config(tmp_path)
    with anyio.fail_after(TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path), max_concurrent_runs=1) as host:
            (job,) = await start_jobs(host, 1)
            await until_agents(1)
            controller = CancelController()
            results: list[ToolResult] = []
            while_job_runs = 0

            async def foreground() -> None:
                results.append(
                    await host.execute("delegate_hang", {"task": "fg"}, signal=controller.signal, call_id="fg")
                )

            async with anyio.create_task_group() as group:
                group.start_soon(foreground)
                while_job_runs += await most_agents_during(_OBSERVE_S)
                # Cancelled while it waits for the slot: it settles aborted without a child.
                controller.cancel("stop")
            await call(host, "job_kill", {"job_id": job})
            await host.wait_job(job)
    assert while_job_runs == 1
    assert spawned_count(spawned) == 1
    assert results[0].is_error


async def test_max_concurrent_runs_rejects_a_limit_below_one() -> None:
    config, _ = hang_config(Path("/nonexistent"))
    with pytest.raises(ValueError, match="max_concurrent_runs must be an integer >= 1"):
        async with Host.open(config, max_concurrent_runs=0):
            pass
