"""Acceptance gaps of issue 5 found by the audit, driven through real fake-runtime processes.

Covers what the existing suites leave implicit: teardown *before* a foreground call returns (not merely by the host's
close), budgets and cancels that land during startup, background stop reasons and dispose-before-report through real
children, the job kill reasons (stream-and-results.md §13.3 scenario 31), and dispose failures of a real child
through the delegation tool (§13.2 scenarios 16-17, §13.3 scenario 26) via the provider seam.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import anyio
import psutil
import pytest
from anyio.abc import TaskGroup

from host import CancelController, Host, ToolResult
from host._contracts import Capabilities, SubagentRequest, SubagentRun
from host._exceptions import ProcessTreeSurvivedError
from host.acp_provider import AcpRunSpec, start_acp_run
from host.cancel import CancelSignal
from host.config import AcpEntryConfig
from host.diagnostics import JobOutcome
from host.stream import FrameObserver, ProviderKind
from host.tools import (
    JobRunner,
    ToolExecutionInput,
    ToolRegistry,
    create_delegation_tool,
    create_job_tools,
    install_timeout_policy,
)
from tests._provider_helpers import is_gone, wait_for_ready_marker
from tests.acp_provider._helpers import agent_entry, agent_spec, wait_for_file
from tests.acp_provider._seams import decorated_spawn, reject_final_exit_wait_after_exit
from tests.conftest import FAKE_ACP_AGENT, FAKE_DSH_RUNTIME
from tests.snapshots import assert_snapshot
from tests.tools._helpers import PROCESS_TIMEOUT_S, text_of
from tests.tools._helpers import acp_config as _acp_config
from tests.tools._helpers import sdk_config as _sdk_config

pytestmark = pytest.mark.anyio

# Tighter graces than the shared default, and the SDK entry named "sdk" (its tool is delegate_sdk).
acp_config = partial(_acp_config, grace_ms=200)
sdk_config = partial(_sdk_config, "sdk")

TEARDOWN_PREFIX = "subagent-acp: Subagent failure (provider: ACP; stage: teardown; category: process-exit; "


def live_fakes() -> list[psutil.Process]:
    """The fake runtimes still alive (not zombies) among this process's descendants."""
    alive: list[psutil.Process] = []
    for proc in psutil.Process().children(recursive=True):
        try:
            cmdline = " ".join(proc.cmdline())
            if proc.status() != psutil.STATUS_ZOMBIE and (
                str(FAKE_ACP_AGENT) in cmdline or str(FAKE_DSH_RUNTIME) in cmdline
            ):
                alive.append(proc)
        except psutil.NoSuchProcess:
            continue
    return alive


# --- foreground: teardown happens before the call returns -------------------------------------------------------


async def test_a_timed_out_foreground_call_has_torn_down_the_whole_tree_before_it_returns(tmp_path: Path) -> None:
    ready, pid_file = tmp_path / "ready", tmp_path / "grandchild.pid"
    config = acp_config(
        timeout_ms=1500,
        MOCK_HANG="1",
        MOCK_TEXT="partial",
        MOCK_IGNORE_CANCEL="1",
        MOCK_TRAP_SIGTERM="1",
        MOCK_READY_FILE=str(ready),
        MOCK_GRANDCHILD_PID_FILE=str(pid_file),
        MOCK_GRANDCHILD_SETSID="1",
    )
    observed: list[tuple[ToolResult, list[psutil.Process], bool]] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            async with anyio.create_task_group() as group:

                async def call() -> None:
                    result = await host.execute("delegate_acp", {"task": "x"}, signal=CancelController().signal)
                    # Still inside the open host: whatever is gone now was disposed by the call itself.
                    observed.append((result, live_fakes(), is_gone(int(pid_file.read_text()))))

                group.start_soon(call)
                await wait_for_ready_marker(ready)
    ((result, alive, grandchild_gone),) = observed
    assert result.to_json() == {
        "is_error": True,
        "error": {
            "message": "tool call timed out after 1500ms",
            "info": {"name": "ToolTimeoutError", "code": "TOOL_TIMEOUT"},
        },
        "content": [{"type": "text", "text": "Error: tool call timed out after 1500ms"}],
    }
    assert alive == [] and grandchild_gone


async def test_a_cancelled_foreground_call_has_torn_down_the_child_before_it_returns(tmp_path: Path) -> None:
    ready, pid_file = tmp_path / "ready", tmp_path / "grandchild.pid"
    config = acp_config(
        MOCK_HANG="1", MOCK_TEXT="partial", MOCK_READY_FILE=str(ready), MOCK_GRANDCHILD_PID_FILE=str(pid_file)
    )
    controller = CancelController()
    observed: list[tuple[ToolResult, list[psutil.Process], bool]] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            async with anyio.create_task_group() as group:

                async def call() -> None:
                    result = await host.execute("delegate_acp", {"task": "x"}, signal=controller.signal)
                    observed.append((result, live_fakes(), is_gone(int(pid_file.read_text()))))

                group.start_soon(call)
                await wait_for_file(ready)
                controller.cancel("parent stopped")
    ((result, alive, grandchild_gone),) = observed
    assert text_of(result) == "Error: subagent run was cancelled\nPartial output before the run ended:\npartial"
    assert alive == [] and grandchild_gone


# --- foreground: budgets and cancels that land during startup --------------------------------------------------


async def test_a_budget_expiring_during_startup_is_tool_timeout_and_leaves_no_child(tmp_path: Path) -> None:
    # session/new is gated on a GO file that never appears: the run can never be published.
    config = acp_config(
        timeout_ms=800, MOCK_NEWSESSION_READY=str(tmp_path / "ready"), MOCK_NEWSESSION_GO=str(tmp_path / "go")
    )
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            result = await host.execute("delegate_acp", {"task": "x"}, signal=CancelController().signal)
            alive = live_fakes()
    assert result.to_json()["error"] == {
        "message": "tool call timed out after 800ms",
        "info": {"name": "ToolTimeoutError", "code": "TOOL_TIMEOUT"},
    }
    assert text_of(result) == "Error: tool call timed out after 800ms"
    assert alive == []


async def test_a_caller_cancel_during_startup_surfaces_the_start_aborted_text(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    config = acp_config(MOCK_NEWSESSION_READY=str(ready), MOCK_NEWSESSION_GO=str(tmp_path / "go"))
    controller = CancelController()
    observed: list[tuple[ToolResult, list[psutil.Process]]] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            async with anyio.create_task_group() as group:

                async def call() -> None:
                    result = await host.execute("delegate_acp", {"task": "x"}, signal=controller.signal)
                    observed.append((result, live_fakes()))

                group.start_soon(call)
                await wait_for_file(ready)
                controller.cancel("parent stopped")
    ((result, alive),) = observed
    assert result.to_json() == {
        "is_error": True,
        "error": {"message": "subagent request was aborted before the ACP child started"},
        "content": [{"type": "text", "text": "Error: subagent request was aborted before the ACP child started"}],
    }
    assert alive == []


# --- background: every stop reason through a real child, dispose before report -----------------------------------


@pytest.mark.parametrize(
    ("stop", "status_line"),
    [
        ("max_tokens", "[status: failed, max-tokens]"),
        ("refusal", "[status: failed, refusal]"),
        (
            "max_turn_requests",
            "[status: failed, error; diagnostic: Subagent failure (provider: ACP; stage: prompt; "
            "category: remote-limit; stop reason: max_turn_requests)]",
        ),
        ("cancelled", "[status: killed]"),
    ],
)
async def test_background_jobs_map_every_acp_stop_reason_to_the_exact_status_line(
    tmp_path: Path, stop: str, status_line: str
) -> None:
    config = acp_config(MOCK_TEXT="partial reply", MOCK_STOP=stop)
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            signal = CancelController().signal
            started = await host.execute("delegate_acp", {"task": "x", "run_in_background": True}, signal=signal)
            job_id = started.to_json()["value"]["job_id"]
            await host.wait_job(job_id)
            report = await host.execute("job_output", {"job_id": job_id}, signal=signal)
    # Partial output of a failed or killed job is not reported.
    assert report.to_json() == {
        "is_error": False,
        "value": status_line,
        "content": [{"type": "text", "text": status_line}],
    }
    assert_snapshot("tools", f"job_output_acp_{stop}", report.to_json())


async def test_a_background_sdk_child_error_shows_the_spec_status_line(tmp_path: Path) -> None:
    config = sdk_config(FAKE_REASON_KIND="error", FAKE_TEXT="partial")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            signal = CancelController().signal
            started = await host.execute("delegate_sdk", {"task": "x", "run_in_background": True}, signal=signal)
            job_id = started.to_json()["value"]["job_id"]
            await host.wait_job(job_id)
            report = await host.execute("job_output", {"job_id": job_id}, signal=signal)
    assert text_of(report) == (
        "[status: failed, error; diagnostic: Subagent failure (provider: DSH SDK; stage: session-run; "
        "category: child-error)]"
    )


async def test_a_killed_job_is_disposed_before_its_outcome_is_reported(tmp_path: Path) -> None:
    ready, pid_file = tmp_path / "ready", tmp_path / "grandchild.pid"
    config = acp_config(
        MOCK_HANG="1",
        MOCK_IGNORE_CANCEL="1",
        MOCK_TRAP_SIGTERM="1",
        MOCK_READY_FILE=str(ready),
        MOCK_GRANDCHILD_PID_FILE=str(pid_file),
        MOCK_GRANDCHILD_SETSID="1",
    )
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            signal = CancelController().signal
            started = await host.execute("delegate_acp", {"task": "x", "run_in_background": True}, signal=signal)
            job_id = started.to_json()["value"]["job_id"]
            await wait_for_ready_marker(ready)
            grandchild = int(pid_file.read_text())
            await host.execute("job_kill", {"job_id": job_id}, signal=signal)
            outcome = await host.wait_job(job_id)
            # Reported, and the host is still open: the job's own dispose reaped the whole tree.
            alive, grandchild_gone = live_fakes(), is_gone(grandchild)
            report = await host.execute("job_output", {"job_id": job_id}, signal=signal)
    assert outcome == JobOutcome("killed")
    assert alive == [] and grandchild_gone
    assert text_of(report) == "[status: killed]"


# --- scenario 31: the job kill reasons ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "expected"), [(None, "background subagent task killed"), ("superseded", "superseded")]
)
async def test_killing_a_job_cancels_its_signal_with_the_default_or_the_given_reason(
    reason: str | None, expected: str
) -> None:
    seen: list[CancelSignal] = []
    outcomes: list[JobOutcome] = []

    async def starter(signal: CancelSignal, _on_frame: FrameObserver) -> SubagentRun:
        seen.append(signal)
        await signal.wait()
        raise RuntimeError("start interrupted")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            runner = JobRunner(group)
            job_id = runner.start("label", starter)
            await anyio.wait_all_tasks_blocked()
            runner.kill(job_id, reason)
            outcomes.append(await runner.wait(job_id))
            await runner.aclose()
    assert seen[0].reason == expected
    # A start that raised after the job was cancelled is a clean kill.
    assert outcomes == [JobOutcome("killed")]


# --- scenarios 16, 17, 26: a real child whose final exit wait fails ---------------------------------------------


@dataclass
class _SeamProvider:
    """An ACP provider over a real child whose final exit wait is rejected (acp-provider.md §13 seam)."""

    spec: AcpRunSpec
    task_group: TaskGroup
    name: str = "acp"
    kind: ProviderKind = "acp"
    capabilities: Capabilities = Capabilities(agent_options=False)

    async def start(self, request: SubagentRequest) -> SubagentRun:
        raw = ProcessTreeSurvivedError("cleanup failed at /private/path with SECRET_TOKEN")
        spawn = decorated_spawn(reject_final_exit_wait_after_exit(raw))
        return await start_acp_run(request, self.spec, task_group=self.task_group, spawn=spawn)


@asynccontextmanager
async def seam_registry(tmp_path: Path, **env: str) -> AsyncGenerator[tuple[ToolRegistry, JobRunner]]:
    entry: AcpEntryConfig = agent_entry(eof_grace_ms=200, grace_ms=200)
    spec = agent_spec(tmp_path, env, eof_grace_ms=200, grace_ms=200)
    async with anyio.create_task_group() as group:
        runner = JobRunner(group)
        registry = ToolRegistry()
        install_timeout_policy(registry)
        provider = _SeamProvider(spec, group)
        registry.register(create_delegation_tool(provider, entry, jobs=lambda: runner))
        for definition in create_job_tools(lambda: runner).values():
            registry.register(definition)
        try:
            yield registry, runner
        finally:
            await runner.aclose()


def delegate(arguments: dict[str, object]) -> ToolExecutionInput:
    return ToolExecutionInput(call_id="c1", name="delegate_acp", arguments=arguments, signal=CancelController().signal)


async def test_a_completed_run_whose_dispose_fails_shows_only_the_safe_dispose_error(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with seam_registry(tmp_path, MOCK_TEXT="answer") as (registry, _runner):
            result = await registry.execute(delegate({"task": "x"}))
    data = result.to_json()
    assert "info" not in data["error"]
    assert text_of(result).startswith("Error: " + TEARDOWN_PREFIX)
    assert "SECRET_TOKEN" not in text_of(result) and "/private/path" not in text_of(result)


async def test_a_failed_run_whose_dispose_fails_too_shows_the_aggregate_text(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with seam_registry(tmp_path, MOCK_TEXT="", MOCK_STOP="max_tokens") as (registry, _runner):
            result = await registry.execute(delegate({"task": "x"}))
    assert text_of(result).startswith(
        "Error: subagent run failed: SubagentRunError: subagent run hit its token limit before finishing; "
        "dispose failed: AcpRunFailure: " + TEARDOWN_PREFIX
    )
    assert "info" not in result.to_json()["error"]


async def test_a_completed_job_whose_dispose_fails_is_a_failed_job(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with seam_registry(tmp_path, MOCK_TEXT="answer") as (registry, runner):
            started = await registry.execute(delegate({"task": "x", "run_in_background": True}))
            job_id = started.to_json()["value"]["job_id"]
            outcome = await runner.wait(job_id)
    assert outcome.status == "failed"
    assert outcome.detail is not None
    assert outcome.detail.startswith("dispose failed: AcpRunFailure: " + TEARDOWN_PREFIX)
