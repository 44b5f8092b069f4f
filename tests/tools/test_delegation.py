"""The ACP delegation tool through a real ``Host`` and the fake ACP agent (docs/behaviour.md#acp-acceptance,
docs/behaviour.md#results-acceptance).

Also pins the exact model-visible results (``ToolResult.to_json()``) in ``snapshots/tools/``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from host import CancelController, Host, HostConfig, ToolResult
from tests._provider_helpers import is_gone
from tests.acp_provider._helpers import wait_for_file
from tests.snapshots import assert_snapshot
from tests.tools._helpers import PROCESS_TIMEOUT_S, acp_config, text_of

pytestmark = pytest.mark.anyio


def normalized(result: ToolResult) -> dict[str, Any]:
    """The result's JSON with the random run and session ids replaced by placeholders."""
    data = result.to_json()
    value = data.get("value")
    if isinstance(value, dict) and "run_id" in value:
        value["run_id"] = "<run_id>"
    if isinstance(value, dict) and "session_id" in value:
        value["session_id"] = "<session_id>"
    return data


async def delegate(config: HostConfig, workspace: Path, **arguments: object) -> ToolResult:
    async with Host.open(config, parent_cwd=str(workspace)) as host:
        return await host.execute("delegate_acp", {"task": "do it", **arguments}, signal=CancelController().signal)


async def test_child_runs_in_the_parent_workspace_when_the_entry_omits_cwd(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        result = await delegate(acp_config(MOCK_ECHO_CWD="1"), tmp_path)
    assert text_of(result) == f"{tmp_path}\n{tmp_path}"


async def test_remote_turn_limit_shows_failure_line_and_partial_output(tmp_path: Path) -> None:
    config = acp_config(MOCK_TEXT="partial loader answer", MOCK_STOP="max_turn_requests")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        result = await delegate(config, tmp_path)
    assert text_of(result) == (
        "Error: subagent run failed\n"
        "Diagnostic: Subagent failure (provider: ACP; stage: prompt; category: remote-limit; "
        "stop reason: max_turn_requests)\n"
        "Partial output before the run ended:\npartial loader answer"
    )
    assert_snapshot("tools", "foreground_error", normalized(result))


async def test_unspawnable_command_surfaces_the_safe_startup_rejection(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        result = await delegate(acp_config(command="/nonexistent/acp-agent-binary"), tmp_path)
    assert text_of(result) == (
        "Error: subagent-acp: Subagent failure (provider: ACP; stage: process; category: process-start)"
    )
    assert_snapshot("tools", "foreground_start_failure", normalized(result))


async def test_hanging_child_past_its_budget_times_out_and_is_disposed_first(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    config = acp_config(timeout_ms=200, MOCK_HANG="1", MOCK_GRANDCHILD_PID_FILE=str(pid_file))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        result = await delegate(config, tmp_path)
    assert text_of(result) == "Error: tool call timed out after 200ms"
    assert is_gone(int(pid_file.read_text()))


async def test_hanging_child_with_300ms_budget_gives_the_exact_tool_timeout_result(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    config = acp_config(timeout_ms=300, MOCK_HANG="1", MOCK_TEXT="partial", MOCK_GRANDCHILD_PID_FILE=str(pid_file))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        result = await delegate(config, tmp_path)
    assert is_gone(int(pid_file.read_text()))
    assert_snapshot("tools", "foreground_tool_timeout", normalized(result))


@pytest.mark.parametrize(
    ("stop", "headline", "snapshot"),
    [
        ("max_tokens", "subagent run hit its token limit before finishing", "foreground_max_tokens"),
        ("refusal", "subagent declined the task", "foreground_refusal"),
        ("cancelled", "subagent run was cancelled", None),
    ],
)
async def test_non_completed_stop_reasons_raise_headline_and_partial_output(
    tmp_path: Path, stop: str, headline: str, snapshot: str | None
) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        result = await delegate(acp_config(MOCK_TEXT="partial reply", MOCK_STOP=stop), tmp_path)
    data = result.to_json()
    assert data["is_error"] is True
    assert "info" not in data["error"]
    assert text_of(result) == f"Error: {headline}\nPartial output before the run ended:\npartial reply"
    if snapshot is not None:
        assert_snapshot("tools", snapshot, normalized(result))


async def test_completed_run_renders_its_text_and_carries_the_run_id(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        result = await delegate(acp_config(MOCK_TEXT="mock child answer"), tmp_path)
    data = result.to_json()
    assert data["is_error"] is False
    assert data["value"]["kind"] == "foreground"
    assert isinstance(data["value"]["run_id"], str) and data["value"]["run_id"]
    assert text_of(result) == "mock child answer"
    assert_snapshot("tools", "foreground_completed", normalized(result))


async def test_cancelling_the_call_during_a_hanging_run_is_a_tool_owned_cancel_and_disposes(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    pid_file = tmp_path / "grandchild.pid"
    config = acp_config(
        MOCK_HANG="1", MOCK_TEXT="partial reply", MOCK_READY_FILE=str(ready), MOCK_GRANDCHILD_PID_FILE=str(pid_file)
    )
    controller = CancelController()
    results: list[ToolResult] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host, anyio.create_task_group() as group:

            async def call() -> None:
                results.append(await host.execute("delegate_acp", {"task": "hang"}, signal=controller.signal))

            group.start_soon(call)
            await wait_for_file(ready)
            controller.cancel("parent stopped")
        assert is_gone(int(pid_file.read_text()))
    (result,) = results
    assert text_of(result) == "Error: subagent run was cancelled\nPartial output before the run ended:\npartial reply"
    assert "info" not in result.to_json()["error"]
    assert_snapshot("tools", "foreground_aborted", normalized(result))


async def test_pre_cancelled_call_never_starts_a_child(tmp_path: Path) -> None:
    spawned = tmp_path / "spawned"
    controller = CancelController()
    controller.cancel()
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(acp_config(MOCK_RECORD_INIT=str(spawned)), parent_cwd=str(tmp_path)) as host:
            result = await host.execute("delegate_acp", {"task": "x"}, signal=controller.signal)
    assert not spawned.exists()
    assert_snapshot("tools", "foreground_aborted_before_dispatch", result.to_json())


async def test_unknown_parent_workspace_is_a_configuration_rejection(tmp_path: Path) -> None:
    def unknown(_agent: object | None) -> str | None:
        return None

    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(acp_config(MOCK_TEXT="x"), parent_cwd=unknown) as host:
            result = await host.execute("delegate_acp", {"task": "x"}, signal=CancelController().signal)
    assert text_of(result) == (
        "Error: subagent-acp: Subagent failure (provider: ACP; stage: initialize; category: configuration)"
    )


async def test_host_open_without_parent_cwd_delegates_in_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(acp_config(MOCK_ECHO_CWD="1")) as host:
            result = await host.execute("delegate_acp", {"task": "x"}, signal=CancelController().signal)
    real = tmp_path.resolve()  # noqa: ASYNC240 (a test's own path, once)
    # The child runs in the directory the program was in, and its session/new names it too.
    assert text_of(result) == f"{real}\n{os.getcwd()}"


async def test_parent_cwd_comes_from_the_calls_agent_token(tmp_path: Path) -> None:
    workspaces = {"left": tmp_path / "left", "right": tmp_path / "right"}
    for path in workspaces.values():
        path.mkdir()

    def parent_cwd_of(agent: object | None) -> str | None:
        return str(workspaces[agent]) if isinstance(agent, str) and agent in workspaces else None

    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(acp_config(MOCK_ECHO_CWD="1"), parent_cwd=parent_cwd_of) as host:
            result = await host.execute("delegate_acp", {"task": "x"}, signal=CancelController().signal, agent="right")
    right = os.fspath(workspaces["right"])
    assert text_of(result) == f"{right}\n{right}"


async def test_empty_task_is_an_argument_error(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        result = await delegate(acp_config(MOCK_TEXT="x"), tmp_path, task="")
    data = result.to_json()
    assert data["error"]["info"]["code"] == "INVALID_ARGS"


@pytest.mark.anyio
async def test_a_timed_out_child_is_disposed_before_the_tool_call_settles(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    # One-shot (session_idle_ms = 0): a session would keep a child that settled the cancel warm.
    config = acp_config(timeout_ms=200, session_idle_ms=0, MOCK_HANG="1", MOCK_GRANDCHILD_PID_FILE=str(pid_file))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            result = await host.execute("delegate_acp", {"task": "x"}, signal=CancelController().signal)
            # Still inside the host: only the tool's own dispose can have reaped the tree by now.
            disposed = is_gone(int(pid_file.read_text()))
    assert text_of(result) == "Error: tool call timed out after 200ms"
    assert disposed
