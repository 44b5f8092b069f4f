"""The ``Host``: providers per entry, the model-visible tool list, and a close that leaves nothing running."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from host import CancelController, Host, HostConfig, SubagentHostError, ToolResult
from host.config._loader import parse_config
from host.tools._delegation import USAGE_TEXT, session_text
from tests.acp_provider._helpers import wait_for_file
from tests.conftest import FAKE_ACP_AGENT, FAKE_DSH_RUNTIME, PYTHON

pytestmark = pytest.mark.anyio

# Real-process tests: an interpreter cold start plus the handshake can take a second or two on a loaded CI box.
PROCESS_TIMEOUT_S = 15


def two_entry_config(**acp_env: str) -> HostConfig:
    acp: dict[str, Any] = {
        "kind": "acp",
        "command": PYTHON,
        "args": [str(FAKE_ACP_AGENT)],
        "env": acp_env,
        "timeout_ms": 60000,
        "dispose_eof_grace_ms": 300,
        "dispose_grace_ms": 300,
    }
    sdk: dict[str, Any] = {"kind": "dsh-sdk", "command": "/opt/dsh/bin/dsh-runtime", "description": "The DSH child."}
    return parse_config({"providers": {"acp": acp, "dsh-sdk": sdk}})


async def test_host_exposes_one_delegation_tool_per_entry_and_the_job_tools() -> None:
    with anyio.fail_after(5):
        async with Host.open(two_entry_config()) as host:
            tools = host.tools()
            providers = dict(host.providers)
    assert [tool["name"] for tool in tools] == [
        "delegate_acp",
        "delegate_dsh_sdk",
        "job_output",
        "job_list",
        "job_kill",
        "changes_apply",
        "session_list",
        "session_close",
    ]
    assert [(name, provider.kind) for name, provider in providers.items()] == [("acp", "acp"), ("dsh-sdk", "dsh-sdk")]
    assert all(set(tool) == {"name", "description", "parameters"} for tool in tools)
    by_name = {tool["name"]: tool for tool in tools}
    assert by_name["delegate_dsh_sdk"]["description"] == "The DSH child. " + USAGE_TEXT + " " + session_text(
        host.config.providers["dsh-sdk"], 7
    )
    default = by_name["delegate_acp"]["description"]
    assert "ACP agent (acp)" in default and PYTHON not in default  # the entry is named, never the command
    assert set(by_name["delegate_acp"]["parameters"]["properties"]) == {
        "task",
        "label",
        "run_in_background",
        "workspace",
        "session_id",
        "fork_session_id",
        "if_lost",
    }
    assert by_name["delegate_acp"]["parameters"]["required"] == ["task"]


async def test_delegation_tool_declares_the_entry_budget_without_showing_it() -> None:
    with anyio.fail_after(5):
        async with Host.open(two_entry_config()) as host:
            # What the host registered for the entry carries its budget (the timeout policy reads timeout_ms).
            definition = host._registry.get("delegate_acp")  # pyright: ignore[reportPrivateUsage]
            schemas = host.tools()
    assert definition is not None and definition.timeout_ms == 60000
    delegation_schemas = [schema for schema in schemas if schema["name"].startswith("delegate_")]
    # job_output's own wait parameter is named timeout_ms; the delegation tools never show their budget.
    assert delegation_schemas and "timeout_ms" not in str(delegation_schemas)


async def test_closing_the_host_cancels_an_outstanding_call_and_disposes_its_child(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    config = two_entry_config(MOCK_HANG="1", MOCK_TEXT="partial", MOCK_READY_FILE=str(ready))
    results: list[ToolResult] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with anyio.create_task_group() as group:
            async with Host.open(config, parent_cwd=str(tmp_path)) as host:

                async def call() -> None:
                    signal = CancelController().signal
                    results.append(await host.execute("delegate_acp", {"task": "x"}, signal=signal))

                group.start_soon(call)
                await wait_for_file(ready)
    (result,) = results
    assert result.content == [
        {"type": "text", "text": "Error: subagent run was cancelled\nPartial output before the run ended:\npartial"}
    ]


async def test_a_closed_host_refuses_new_calls() -> None:
    with anyio.fail_after(5):
        async with Host.open(two_entry_config()) as host:
            pass
        with pytest.raises(SubagentHostError):
            await host.execute("delegate_acp", {"task": "x"}, signal=CancelController().signal)


async def test_sdk_entry_runs_through_the_host(tmp_path: Path) -> None:
    sdk: dict[str, Any] = {
        "kind": "dsh-sdk",
        "command": PYTHON,
        "args": [str(FAKE_DSH_RUNTIME)],
        "env": {"FAKE_TEXT": "hello from fake runtime"},
        "shutdown_timeout_ms": 100,
        "dispose_eof_grace_ms": 200,
        "dispose_grace_ms": 200,
    }
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(parse_config({"providers": {"sdk": sdk}}), parent_cwd=str(tmp_path)) as host:
            result = await host.execute("delegate_sdk", {"task": "x"}, signal=CancelController().signal)
    assert result.content == [{"type": "text", "text": "hello from fake runtime"}]
