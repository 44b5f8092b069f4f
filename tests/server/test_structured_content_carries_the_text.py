"""What the model must see is in ``structuredContent``: through the official client, in both protocol eras, over
stdio and Streamable HTTP, every tool in every result shape either has no ``structuredContent`` or carries every
text of its ``content`` there too (Claude Code and Codex show the model only ``structuredContent`` when present).
A delegation result holds its exact text as ``output`` (or ``error`` for ``isError``) beside the run's facts."""

from __future__ import annotations

import re
import subprocess
import warnings
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.cli._helpers import cli_env
from tests.conftest import PYTHON
from tests.server._helpers import SERVE_TIMEOUT_S, acp_entry, client_session, serve_args, serve_params, write_config
from tests.snapshots import scrub_session_ids

pytestmark = pytest.mark.anyio

_URL = re.compile(rb"serving MCP at (http://127\.0\.0\.1:\d+/mcp)")
CallTool = Callable[[str, dict[str, Any]], Awaitable[types.CallToolResult]]


def config_of(tmp_path: Path) -> Path:
    return write_config(
        tmp_path,
        {
            "echo": acp_entry(),
            "refuse": acp_entry(MOCK_STOP="refusal", MOCK_TEXT="partial words"),
            "slow": {**acp_entry(MOCK_HANG="1"), "timeout_ms": 300},
        },
    )


@asynccontextmanager
async def http_url(config: Path) -> AsyncGenerator[str]:
    args = serve_args(config, "--http", "127.0.0.1:0")
    async with await anyio.open_process(
        [PYTHON, *args], env=cli_env(), cwd=config.parent, stdin=subprocess.DEVNULL
    ) as process:
        assert process.stderr is not None
        stderr = BufferedByteReceiveStream(process.stderr)
        match = None
        while match is None:
            match = _URL.search(await stderr.receive_until(b"\n", 1 << 16))
        try:
            yield match.group(1).decode()
        finally:
            process.terminate()
            await process.wait()


@asynccontextmanager
async def calling(transport: str, config: Path) -> AsyncGenerator[tuple[str, CallTool]]:
    """``(negotiated version, call_tool)`` of the official client on ``transport``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        if transport == "stdio-handshake":
            async with client_session(config) as session:
                assert session.initialize_result is not None
                yield session.initialize_result.protocol_version, session.call_tool
        elif transport == "stdio-2026":
            async with Client(serve_params(config)) as client:
                yield str(client.protocol_version), client.call_tool
        else:
            async with http_url(config) as url:
                if transport == "http-2026":
                    async with Client(url) as client:
                        yield str(client.protocol_version), client.call_tool
                else:
                    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
                        initialized = await session.initialize()
                        yield initialized.protocol_version, session.call_tool


def texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


@pytest.mark.parametrize("transport", ["stdio-handshake", "stdio-2026", "http-handshake", "http-2026"])
async def test_every_text_a_result_carries_is_in_its_structured_content(tmp_path: Path, transport: str) -> None:
    results: dict[str, types.CallToolResult] = {}
    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with calling(transport, config_of(tmp_path)) as (version, call):
            results["answer"] = await call("delegate_echo", {"task": "the answer"})
            results["refusal"] = await call("delegate_refuse", {"task": "x"})
            results["timeout"] = await call("delegate_slow", {"task": "x"})
            results["bad_arguments"] = await call("delegate_echo", {"task": ""})
            results["background_start"] = await call("delegate_echo", {"task": "later", "run_in_background": True})
            results["job_output"] = await call("job_output", {"job_id": "subagent-1", "wait": True})
            results["job_list"] = await call("job_list", {})
            results["job_kill"] = await call("job_kill", {"job_id": "subagent-1"})
            results["unknown_job"] = await call("job_output", {"job_id": "subagent-9"})
            results["unknown_tool"] = await call("no_such_tool", {})
    assert version == ("2026-07-28" if transport.endswith("2026") else "2025-11-25")
    for name, result in results.items():
        structured = result.structured_content
        if structured is not None:
            values = [value for value in structured.values() if isinstance(value, str)]
            for text in texts(result):
                assert text in values, (name, text, structured)
    shown: dict[str, dict[str, Any]] = {name: (result.structured_content or {}) for name, result in results.items()}
    assert shown["answer"]["output"] == "the answer" and shown["answer"]["stop_reason"] == "completed"
    refused = "Error: subagent declined the task\nPartial output before the run ended:\npartial words"
    assert shown["refusal"]["error"] == refused
    assert shown["timeout"]["error"] == "Error: tool call timed out after 300ms"
    assert shown["bad_arguments"]["error"].startswith("Error: invalid arguments:")
    background_run_id = shown["background_start"].pop("run_id")  # minted at the start
    assert isinstance(background_run_id, str) and len(background_run_id) == 36
    assert scrub_session_ids(shown["background_start"]) == {
        "provider": "echo",
        "output": "started background subagent job subagent-1",
        "session_id": "<session_id>",
        "job_id": "subagent-1",
    }
    # The job tools answer text only: no structuredContent, so every client shows their content.
    assert all(results[name].structured_content is None for name in ("job_output", "job_list", "job_kill"))
    assert [scrub_session_ids(text) for text in texts(results["job_output"])] == [
        "later\n[session: <session_id>]\n[status: completed]"
    ]
