"""Background delegation jobs, ``job_output`` and ``job_kill`` through a real ``Host`` (results §7, scenario 94)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import anyio
import pytest

from host import CancelController, Host, ToolResult
from host.acp_provider import AcpProvider
from host.config import AcpEntryConfig
from host.tools import ToolExecutionInput, ToolRegistry, create_delegation_tool
from tests._provider_helpers import is_gone
from tests.acp_provider._helpers import wait_for_file
from tests.snapshots import assert_snapshot
from tests.tools._helpers import PROCESS_TIMEOUT_S, text_of
from tests.tools._helpers import acp_config as _acp_config

pytestmark = pytest.mark.anyio

# Jobs pin the permission policy their denial test relies on.
acp_config = partial(_acp_config, permission="reject")


async def start_job(host: Host, task: str = "background task") -> str:
    started = await host.execute(
        "delegate_acp", {"task": task, "run_in_background": True}, signal=CancelController().signal
    )
    assert text_of(started).startswith("started background subagent job ")
    job_id = started.to_json()["value"]["job_id"]
    assert isinstance(job_id, str)
    return job_id


async def call(host: Host, name: str, job_id: str) -> ToolResult:
    return await host.execute(name, {"job_id": job_id}, signal=CancelController().signal)


async def test_completed_job_reports_its_output_once_then_only_the_status(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(acp_config(MOCK_TEXT="background answer"), parent_cwd=str(tmp_path)) as host:
            started = await host.execute(
                "delegate_acp", {"task": "x", "run_in_background": True}, signal=CancelController().signal
            )
            job_id = started.to_json()["value"]["job_id"]
            await host.wait_job(job_id)
            first = await call(host, "job_output", job_id)
            again = await call(host, "job_output", job_id)
    assert_snapshot("tools", "background_started", started.to_json())
    assert text_of(first) == "background answer\n[status: completed]"
    assert text_of(again) == "[status: completed]"
    assert_snapshot("tools", "job_output_completed", first.to_json())


async def test_running_job_streams_new_text_then_kill_settles_killed(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    config = acp_config(MOCK_HANG="1", MOCK_TEXT="partial", MOCK_READY_FILE=str(ready))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            job_id = await start_job(host)
            await wait_for_file(ready)
            running = await call(host, "job_output", job_id)
            running_again = await call(host, "job_output", job_id)
            killed = await call(host, "job_kill", job_id)
            outcome = await host.wait_job(job_id)
            final = await call(host, "job_output", job_id)
    assert text_of(running) == "partial\n[status: running]"
    assert text_of(running_again) == "[status: running]"
    assert text_of(killed) == f"requested cancellation of job {job_id}"
    assert outcome.status == "killed"
    assert text_of(final) == "[status: killed]"
    assert_snapshot("tools", "job_output_running", running.to_json())
    assert_snapshot("tools", "job_kill", killed.to_json())
    assert_snapshot("tools", "job_output_killed", final.to_json())


async def test_denied_permission_in_a_background_job_is_a_failure_with_the_permission_line(tmp_path: Path) -> None:
    config = acp_config(permission="reject", MOCK_PERMISSION="1", MOCK_TOOL_KIND="execute")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            job_id = await start_job(host)
            outcome = await host.wait_job(job_id)
            report = await call(host, "job_output", job_id)
    assert outcome.status == "failed"
    assert outcome.detail == (
        "aborted; diagnostic: ACP unattended decision (policy: reject; request: execute; decision: denied)"
    )
    assert_snapshot("tools", "job_output_failed", report.to_json())


async def test_background_start_failure_is_a_failed_job_with_the_described_error(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(acp_config(command="/nonexistent/acp-agent-binary"), parent_cwd=str(tmp_path)) as host:
            job_id = await start_job(host)
            outcome = await host.wait_job(job_id)
    assert outcome.status == "failed"
    assert outcome.detail == (
        "AcpRunFailure: subagent-acp: Subagent failure (provider: ACP; stage: process; category: process-start)"
    )


async def test_unknown_job_ids_fail_with_a_coded_error(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(acp_config(MOCK_TEXT="x"), parent_cwd=str(tmp_path)) as host:
            output = await call(host, "job_output", "job-404")
            kill = await call(host, "job_kill", "job-404")
    assert text_of(output) == 'Error: unknown background job "job-404"'
    assert text_of(kill) == 'Error: unknown background job "job-404"'
    assert_snapshot("tools", "job_output_unknown_job", output.to_json())


async def test_closing_the_host_kills_and_disposes_every_live_job(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    pid_file = tmp_path / "grandchild.pid"
    config = acp_config(MOCK_HANG="1", MOCK_READY_FILE=str(ready), MOCK_GRANDCHILD_PID_FILE=str(pid_file))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            hanging = await start_job(host)
            await wait_for_file(ready)
            grandchild = int(pid_file.read_text())
            # A second job still starting when the host closes must not survive either.
            starting = await start_job(host)
        outcomes = [await host.wait_job(job_id) for job_id in (hanging, starting)]
    assert is_gone(grandchild)
    assert [outcome.status for outcome in outcomes] == ["killed", "killed"]


async def test_background_delegation_without_a_job_runner_raises_unavailable(tmp_path: Path) -> None:
    entry = acp_config(MOCK_TEXT="x").providers["acp"]
    assert isinstance(entry, AcpEntryConfig)
    registry = ToolRegistry()
    result: ToolResult | None = None
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with anyio.create_task_group() as group:
            provider = AcpProvider(entry, task_group=group)
            registry.register(create_delegation_tool(provider, entry, parent_cwd_of=lambda _agent: str(tmp_path)))
            result = await registry.execute(
                ToolExecutionInput(
                    call_id="c1",
                    name="delegate_acp",
                    arguments={"task": "x", "run_in_background": True},
                    signal=CancelController().signal,
                )
            )
            await provider.aclose()
    assert result is not None
    assert text_of(result) == "Error: background jobs unavailable"
