"""The DSH SDK delegation tool through a real ``Host`` and the fake runtime (docs/behaviour.md#sdk-acceptance G1–G3)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from host import CancelController, Host
from tests.snapshots import assert_snapshot
from tests.tools._helpers import PROCESS_TIMEOUT_S, sdk_config, text_of

pytestmark = pytest.mark.anyio


async def test_runtime_runs_in_the_parent_workspace(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(sdk_config(FAKE_ECHO_CWD="1", FAKE_TEXT="done"), parent_cwd=str(tmp_path)) as host:
            result = await host.execute("delegate_dsh_sdk", {"task": "x"}, signal=CancelController().signal)
    assert text_of(result) == f"cwd={await anyio.Path(tmp_path).resolve()}\ndone"


async def test_child_error_shows_failure_line_and_partial_output(tmp_path: Path) -> None:
    config = sdk_config(FAKE_REASON_KIND="error", FAKE_TEXT="partial child loader answer")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            result = await host.execute("delegate_dsh_sdk", {"task": "x"}, signal=CancelController().signal)
    assert text_of(result) == (
        "Error: subagent run failed\n"
        "Diagnostic: Subagent failure (provider: DSH SDK; stage: session-run; category: child-error)\n"
        "Partial output before the run ended:\npartial child loader answer"
    )
    assert_snapshot("tools", "foreground_sdk_error", result.to_json())


async def test_background_job_disposed_by_the_child_is_a_failure_with_its_diagnostic(tmp_path: Path) -> None:
    config = sdk_config(FAKE_REASON_KIND="aborted", FAKE_ABORT_REASON_KIND="disposed")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            signal = CancelController().signal
            started = await host.execute("delegate_dsh_sdk", {"task": "x", "run_in_background": True}, signal=signal)
            job_id = started.to_json()["value"]["job_id"]
            outcome = await host.wait_job(job_id)
            report = await host.execute("job_output", {"job_id": job_id}, signal=signal)
    assert outcome.status == "failed"
    assert outcome.detail == (
        "aborted; diagnostic: Subagent failure (provider: DSH SDK; stage: session-run; category: child-disposed)"
    )
    assert text_of(report) == (
        "(no new output)\n[session: <session_id>]\n"
        "[status: failed, aborted; diagnostic: Subagent failure (provider: DSH SDK; "
        "stage: session-run; category: child-disposed)]"
    )
    assert_snapshot("tools", "job_output_sdk_failed", report.to_json())
