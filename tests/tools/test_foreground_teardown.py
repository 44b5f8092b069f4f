"""A foreground delegation call returns only after its child tree is torn down: on completion, timeout, caller
cancel, a budget or cancel during startup, and when the child's dispose fails (real fake-runtime processes).
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import anyio
import psutil
import pytest

from host import CancelController, Host, ToolResult
from tests._provider_helpers import is_gone, wait_for_ready_marker
from tests.acp_provider._helpers import wait_for_file
from tests.tools._helpers import PROCESS_TIMEOUT_S, live_fakes, text_of
from tests.tools._helpers import acp_config as _acp_config
from tests.tools._seams import delegate, seam_registry

pytestmark = pytest.mark.anyio


# Tighter graces than the shared default, and the SDK entry named "sdk" (its tool is delegate_sdk).
acp_config = partial(_acp_config, grace_ms=200)


TEARDOWN_PREFIX = "subagent-acp: Subagent failure (provider: ACP; stage: teardown; category: process-exit; "


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


async def test_a_cancelled_one_shot_foreground_call_has_torn_down_the_child_before_it_returns(tmp_path: Path) -> None:
    # session_idle_ms = 0: no warm child after a turn (a session keeps it otherwise: tests/sessions/).
    ready, pid_file = tmp_path / "ready", tmp_path / "grandchild.pid"
    config = acp_config(
        session_idle_ms=0,
        MOCK_HANG="1",
        MOCK_TEXT="partial",
        MOCK_READY_FILE=str(ready),
        MOCK_GRANDCHILD_PID_FILE=str(pid_file),
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
