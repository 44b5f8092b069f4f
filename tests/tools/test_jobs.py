"""Background delegation jobs, ``job_output`` / ``job_list`` / ``job_kill`` through a real ``Host``, with the
reference job tools' exact texts."""

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
from tests.snapshots import assert_snapshot, scrub_run_ids
from tests.tools._helpers import PROCESS_TIMEOUT_S, text_of
from tests.tools._helpers import acp_config as _acp_config

pytestmark = pytest.mark.anyio

# Jobs pin the permission policy their denial test relies on.
acp_config = partial(_acp_config, permission="reject")


async def start_job(host: Host, task: str = "background task", label: str | None = None) -> str:
    arguments: dict[str, object] = {"task": task, "run_in_background": True}
    if label is not None:
        arguments["label"] = label
    started = await host.execute("delegate_acp", arguments, signal=CancelController().signal)
    assert text_of(started).startswith("started background subagent job ")
    job_id = started.to_json()["value"]["job_id"]
    assert isinstance(job_id, str)
    return job_id


async def call(host: Host, name: str, job_id: str, **extra: object) -> ToolResult:
    return await host.execute(name, {"job_id": job_id, **extra}, signal=CancelController().signal)


async def test_a_completed_job_returns_its_full_answer_on_every_read(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(acp_config(MOCK_TEXT="background answer"), parent_cwd=str(tmp_path)) as host:
            started = await host.execute(
                "delegate_acp", {"task": "x", "run_in_background": True}, signal=CancelController().signal
            )
            job_id = started.to_json()["value"]["job_id"]
            await host.wait_job(job_id)
            first = await call(host, "job_output", job_id)
            again = await call(host, "job_output", job_id)
    assert job_id == "subagent-1"
    value = started.to_json()
    # The run id is minted at the start, so a job can be traced to its record before its child exists.
    run_id = value["value"].pop("run_id")
    assert isinstance(run_id, str) and len(run_id) == 36
    assert_snapshot("tools", "background_started", value)
    assert text_of(first) == "background answer\n[session: <session_id>]\n[status: completed]"
    assert text_of(again) == "background answer\n[session: <session_id>]\n[status: completed]"
    assert_snapshot("tools", "job_output_completed", first.to_json())


async def test_an_answer_ending_in_a_newline_gets_no_second_one(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(acp_config(MOCK_TEXT="line\n"), parent_cwd=str(tmp_path)) as host:
            job_id = await start_job(host)
            await host.wait_job(job_id)
            report = await call(host, "job_output", job_id)
    assert text_of(report) == "line\n[session: <session_id>]\n[status: completed]"


async def test_a_running_job_shows_no_output_then_stopping_after_kill_then_killed(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    config = acp_config(MOCK_HANG="1", MOCK_TEXT="partial", MOCK_READY_FILE=str(ready), grace_ms=2000)
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            job_id = await start_job(host)
            await wait_for_file(ready)
            running = await call(host, "job_output", job_id)
            killed = await call(host, "job_kill", job_id)
            stopping = await call(host, "job_output", job_id)
            outcome = await host.wait_job(job_id)
            final = await call(host, "job_output", job_id)
            kill_again = await call(host, "job_kill", job_id)
    # Nothing before it settles: streamed text is not a job's answer.
    assert text_of(running) == "(no new output)\n[session: <session_id>]\n[status: running]"
    assert text_of(killed) == f"requested cancellation of job {job_id}"
    assert text_of(stopping) == "(no new output)\n[session: <session_id>]\n[status: stopping]"
    assert outcome.status == "killed"
    assert text_of(final) == "(no new output)\n[session: <session_id>]\n[status: killed]"
    assert text_of(kill_again) == f"job {job_id} had already finished [status: killed]"
    assert_snapshot("tools", "job_output_running", running.to_json())
    assert_snapshot("tools", "job_kill", killed.to_json())
    assert_snapshot("tools", "job_output_stopping", stopping.to_json())
    assert_snapshot("tools", "job_output_killed", final.to_json())
    assert_snapshot("tools", "job_kill_finished", kill_again.to_json())


async def test_wait_blocks_until_the_job_settles(tmp_path: Path) -> None:
    config = acp_config(MOCK_TEXT="waited answer")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            # The child is a cold interpreter: the wait begins long before the job settles.
            job_id = await start_job(host)
            report = await call(host, "job_output", job_id, wait=True, timeout_ms=10_000)
    assert text_of(report) == "waited answer\n[session: <session_id>]\n[status: completed]"
    assert_snapshot("tools", "job_output_wait_completed", report.to_json())


async def test_a_timed_out_wait_returns_the_running_read_and_leaves_the_job_alive(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    config = acp_config(MOCK_HANG="1", MOCK_READY_FILE=str(ready))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            job_id = await start_job(host)
            await wait_for_file(ready)
            started = anyio.current_time()
            report = await call(host, "job_output", job_id, wait=True, timeout_ms=200)
            waited = anyio.current_time() - started
            still_running = await call(host, "job_output", job_id)
    assert waited >= 0.2
    assert text_of(report) == "(no new output)\n[session: <session_id>]\n[status: running]"
    assert text_of(still_running) == "(no new output)\n[session: <session_id>]\n[status: running]"


async def test_job_list_shows_one_line_per_job_or_none(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    config = acp_config(MOCK_HANG="1", MOCK_READY_FILE=str(ready))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            empty = await host.execute("job_list", {}, signal=CancelController().signal)
            first = await start_job(host, label="review the diff")
            await wait_for_file(ready)
            await call(host, "job_kill", first)
            await host.wait_job(first)
            second = await start_job(host)
            listed = await host.execute("job_list", {}, signal=CancelController().signal)
    assert text_of(empty) == "(no background jobs)"
    assert scrub_run_ids(text_of(listed)) == (
        f"{first} [subagent] killed — review the diff [run: <run_id>]\n"
        f"{second} [subagent] running — acp [run: <run_id>]"
    )
    assert_snapshot("tools", "job_list_empty", empty.to_json())
    assert_snapshot("tools", "job_list", listed.to_json())


async def test_a_job_honours_the_entry_timeout_and_settles_failed_with_the_timeout_text(tmp_path: Path) -> None:
    config = acp_config(timeout_ms=300, MOCK_HANG="1")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            job_id = await start_job(host)
            outcome = await host.wait_job(job_id)
            report = await call(host, "job_output", job_id)
    assert outcome.status == "failed"
    expected = "(no new output)\n[session: <session_id>]\n[status: failed, tool call timed out after 300ms]"
    assert text_of(report) == expected
    assert_snapshot("tools", "job_output_timed_out", report.to_json())


async def test_an_unreported_completion_is_announced_once_and_a_read_one_is_not(tmp_path: Path) -> None:
    notices: list[tuple[str, str]] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(acp_config(MOCK_TEXT="done"), parent_cwd=str(tmp_path)) as host:
            host.on_job_done(lambda job_id, notice: notices.append((job_id, notice)))
            announced = await start_job(host, label="first")
            await host.wait_job(announced)
            waited = await start_job(host, label="second")
            await call(host, "job_output", waited, wait=True)
    assert notices == [
        (
            announced,
            f"background job {announced} (subagent: first) finished [status: completed]. "
            "Read its output with job_output.",
        )
    ]


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


async def test_unknown_and_empty_job_ids_fail_with_the_reference_texts(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(acp_config(MOCK_TEXT="x"), parent_cwd=str(tmp_path)) as host:
            output = await call(host, "job_output", "subagent-404")
            kill = await call(host, "job_kill", "subagent-404")
            empty = await call(host, "job_output", "")
            empty_kill = await call(host, "job_kill", "")
    assert text_of(output) == "Error: unknown job subagent-404"
    assert text_of(kill) == "Error: unknown job subagent-404"
    assert text_of(empty) == 'Error: invalid job_id: expected a non-empty string, got ""'
    assert text_of(empty_kill) == text_of(empty)
    assert_snapshot("tools", "job_output_unknown_job", output.to_json())
    assert_snapshot("tools", "job_output_empty_job_id", empty.to_json())


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
