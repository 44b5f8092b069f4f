"""Background delegation jobs through real children: every stop reason's status line, dispose before the outcome is
reported, the kill reasons, and a dispose failure that turns a completed job into a failed one.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import anyio
import pytest

from host import CancelController, Host
from host.cancel import CancelSignal
from host.diagnostics import JobOutcome
from host.run._contracts import SubagentRun
from host.stream import FrameObserver
from host.tools import (
    JobRunner,
)
from tests._provider_helpers import is_gone, wait_for_ready_marker
from tests.snapshots import assert_snapshot, scrub_session_ids
from tests.tools._helpers import PROCESS_TIMEOUT_S, live_fakes, text_of
from tests.tools._helpers import acp_config as _acp_config
from tests.tools._helpers import sdk_config as _sdk_config
from tests.tools._seams import delegate, seam_registry

pytestmark = pytest.mark.anyio


# Tighter graces than the shared default, and the SDK entry named "sdk" (its tool is delegate_sdk).
acp_config = partial(_acp_config, grace_ms=200)


sdk_config = partial(_sdk_config, "sdk")


TEARDOWN_PREFIX = "subagent-acp: Subagent failure (provider: ACP; stage: teardown; category: process-exit; "


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
    expected = "(no new output)\n[session: <session_id>]\n" + status_line
    assert scrub_session_ids(report.to_json()) == {
        "is_error": False,
        "value": expected,
        "content": [{"type": "text", "text": expected}],
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
        "(no new output)\n[session: <session_id>]\n"
        "[status: failed, error; diagnostic: Subagent failure (provider: DSH SDK; "
        "stage: session-run; category: child-error)]"
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
    run_id = started.to_json()["value"]["run_id"]
    assert outcome == JobOutcome("killed", run_id=run_id, session_id=outcome.session_id) and outcome.session_id
    assert alive == [] and grandchild_gone
    assert text_of(report) == "(no new output)\n[session: <session_id>]\n[status: killed]"


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


async def test_a_completed_job_whose_dispose_fails_is_a_failed_job(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with seam_registry(tmp_path, MOCK_TEXT="answer") as (registry, runner):
            started = await registry.execute(delegate({"task": "x", "run_in_background": True}))
            job_id = started.to_json()["value"]["job_id"]
            outcome = await runner.wait(job_id)
    assert outcome.status == "failed"
    assert outcome.detail is not None
    assert outcome.detail.startswith("dispose failed: AcpRunFailure: " + TEARDOWN_PREFIX)
