"""``serve`` through the official client: version negotiation, the exact tool list, a foreground call with progress,
an error call, the background job flow with the reference texts, and the completion notice."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPDeprecationWarning

from host.sessions import is_session_id
from tests._provider_helpers import wait_for_ready_marker
from tests.server._helpers import SERVE_TIMEOUT_S, RawServer, acp_entry, client_session, write_config
from tests.snapshots import assert_snapshot, scrub_run_ids, scrub_session_ids

pytestmark = pytest.mark.anyio


def described(description: str, **env: str) -> dict[str, Any]:
    entry = acp_entry(**env)
    entry["description"] = description
    return entry


def jobs_config(tmp_path: Path) -> Path:
    ready = tmp_path / "ready"
    return write_config(
        tmp_path,
        {
            "echo": described("Echo the task."),
            "refuse": described("Always refuses.", MOCK_STOP="refusal", MOCK_TEXT="no"),
            "slow": described("Hangs until cancelled.", MOCK_HANG="1", MOCK_READY_FILE=str(ready)),
        },
    )


async def test_initialize_echoes_a_supported_version_and_answers_the_newest_otherwise(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"echo": acp_entry()})
    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with RawServer.open(config) as server:
            answers = [(await server.initialize(version))["result"] for version in ("2025-06-18", "2025-03-26")]
            newest = (await server.initialize("2099-01-01"))["result"]
    assert [answer["protocolVersion"] for answer in answers] == ["2025-06-18", "2025-03-26"]
    assert newest["protocolVersion"] == "2025-11-25"
    assert newest["capabilities"] == {"logging": {}, "tools": {"listChanged": False}}
    assert newest["serverInfo"]["name"] == "subagent-host"


async def test_tools_calls_and_background_jobs_through_the_official_client(tmp_path: Path) -> None:
    notices: list[str] = []
    notice_seen = anyio.Event()

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        notices.append(str(params.data))
        notice_seen.set()

    messages: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        del progress, total
        messages.append(message)

    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with client_session(jobs_config(tmp_path), logging_callback=on_log) as session:
            initialized = session.initialize_result
            listed = await session.list_tools()
            echoed = await session.call_tool("delegate_echo", {"task": "hello"}, progress_callback=on_progress)
            progress_at_return = list(messages)
            refused = await session.call_tool("delegate_refuse", {"task": "x"})
            unknown = await session.call_tool("job_output", {"job_id": "subagent-9"})
            started = await session.call_tool("delegate_slow", {"task": "x", "run_in_background": True})
            await wait_for_ready_marker(tmp_path / "ready")
            listing = await session.call_tool("job_list", {})
            timed_out_wait = await session.call_tool(
                "job_output", {"job_id": "subagent-1", "wait": True, "timeout_ms": 100}
            )
            killed = await session.call_tool("job_kill", {"job_id": "subagent-1", "reason": "not needed"})
            after_kill = await session.call_tool("job_output", {"job_id": "subagent-1", "wait": True})
            with pytest.warns(MCPDeprecationWarning):
                await session.set_logging_level("info")  # pyright: ignore[reportDeprecated]
            announced = await session.call_tool(
                "delegate_echo", {"task": "in the background", "run_in_background": True}
            )
            await notice_seen.wait()
            completed = await session.call_tool("job_output", {"job_id": "subagent-2"})
            finished_kill = await session.call_tool("job_kill", {"job_id": "subagent-2"})
    assert initialized is not None and initialized.protocol_version == "2025-11-25"
    assert_snapshot("server", "tools_list", listed.model_dump(mode="json", by_alias=True, exclude_none=True))
    assert [block.text for block in echoed.content if isinstance(block, types.TextContent)] == ["hello"]
    assert echoed.is_error is False
    assert echoed.structured_content is not None
    assert echoed.structured_content["provider"] == "echo"
    assert echoed.structured_content["stop_reason"] == "completed"
    assert is_session_id(echoed.structured_content["session_id"])
    assert progress_at_return and "".join(m or "" for m in progress_at_return) == "hello"
    texts = {
        "refused": refused,
        "unknown": unknown,
        "started": started,
        "listing": listing,
        "timed_out_wait": timed_out_wait,
        "killed": killed,
        "after_kill": after_kill,
        "announced": announced,
        "completed": completed,
        "finished_kill": finished_kill,
    }
    shown = {
        name: (scrub_run_ids(str(scrub_session_ids(text_of(result)))), result.is_error)
        for name, result in texts.items()
    }
    assert shown == {
        "refused": ("Error: subagent declined the task\nPartial output before the run ended:\nno", True),
        "unknown": ("Error: unknown job subagent-9", True),
        "started": ("started background subagent job subagent-1", False),
        "listing": ("subagent-1 [subagent] running — slow [run: <run_id>]", False),
        "timed_out_wait": ("(no new output)\n[session: <session_id>]\n[status: running]", False),
        "killed": ("requested cancellation of job subagent-1", False),
        "after_kill": ("(no new output)\n[session: <session_id>]\n[status: killed]", False),
        "announced": ("started background subagent job subagent-2", False),
        "completed": ("in the background\n[session: <session_id>]\n[status: completed]", False),
        "finished_kill": ("job subagent-2 had already finished [status: completed]", False),
    }
    # On purpose: the background-start line is in structuredContent too (clients may show only that).
    # So is the run id the job's record will have (minted at the start).
    assert started.structured_content is not None
    run_id = started.structured_content.pop("run_id")
    assert isinstance(run_id, str) and len(run_id) == 36
    assert scrub_session_ids(started.structured_content) == {
        "provider": "slow",
        "output": "started background subagent job subagent-1",
        "session_id": "<session_id>",
        "job_id": "subagent-1",
    }
    assert notices == [
        "background job subagent-2 (subagent: echo) finished [status: completed]. Read its output with job_output."
    ]
    assert_snapshot("server", "job_flow", {name: text for name, (text, _) in shown.items()})


def text_of(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


async def test_the_2026_era_client_calls_a_tool_and_sees_progress(tmp_path: Path) -> None:
    from mcp import Client

    from tests.server._helpers import serve_params

    messages: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        del progress, total
        messages.append(message)

    config = write_config(tmp_path, {"echo": described("Echo the task.")})
    with anyio.fail_after(SERVE_TIMEOUT_S), warnings.catch_warnings():
        async with Client(serve_params(config)) as client:
            version = client.protocol_version
            result = await client.call_tool("delegate_echo", {"task": "modern"}, progress_callback=on_progress)
    assert version == "2026-07-28"
    assert isinstance(result, types.CallToolResult)
    assert text_of(result) == "modern" and result.is_error is False
    assert messages
