"""``logging/setLevel`` is per connection: two Streamable HTTP sessions of the official client at different levels
each get only the ``notifications/message`` lines at or above their own level."""

from __future__ import annotations

import re
import subprocess
import warnings
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning

from tests._provider_helpers import wait_for_file
from tests.cli._helpers import cli_env
from tests.conftest import PYTHON
from tests.server._helpers import SERVE_TIMEOUT_S, acp_entry, serve_args, write_config

pytestmark = pytest.mark.anyio

_URL = re.compile(rb"serving MCP at (http://127\.0\.0\.1:\d+/mcp)")
_NOTICE_WAIT_S = 10.0
"""How long A's notice may take once its job was released (a loaded 2-core box)."""
_SETTLE_S = 0.5
"""After A's notice arrived, how long B may still receive one the server sent before it."""


def gated_entry(tmp_path: Path, name: str) -> dict[str, Any]:
    """A child that stops at ``session/new`` until ``<name>.go`` exists, then answers ``done <name>``."""
    return acp_entry(
        MOCK_TEXT=f"done {name}",
        MOCK_NEWSESSION_READY=str(tmp_path / f"{name}.ready"),
        MOCK_NEWSESSION_GO=str(tmp_path / f"{name}.go"),
    )


@asynccontextmanager
async def http_session(url: str, notices: list[str], seen: anyio.Event) -> AsyncGenerator[ClientSession]:
    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        notices.append(str(params.data))
        seen.set()

    async with streamable_http_client(url) as (read, write), ClientSession(read, write, logging_callback=on_log) as s:
        await s.initialize()
        yield s


async def set_level(session: ClientSession, level: types.LoggingLevel) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await session.set_logging_level(level)  # pyright: ignore[reportDeprecated]


async def until_settled(session: ClientSession, job_id: str) -> None:
    """Poll ``job_list`` (which reads no output, so the job stays unreported) until ``job_id`` is not running."""
    while True:
        listed = await session.call_tool("job_list", {})
        text = "".join(block.text for block in listed.content if isinstance(block, types.TextContent))
        if f"{job_id} [subagent] running" not in text:
            return
        await anyio.sleep(0.05)


async def test_each_http_session_gets_only_the_notices_at_or_above_its_own_level(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"a": gated_entry(tmp_path, "a"), "b": gated_entry(tmp_path, "b")})
    notices_a: list[str] = []
    notices_b: list[str] = []
    seen_a, seen_b = anyio.Event(), anyio.Event()
    args = serve_args(config, "--http", "127.0.0.1:0")
    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with await anyio.open_process(
            [PYTHON, *args], env=cli_env(), cwd=tmp_path, stdin=subprocess.DEVNULL
        ) as process:
            assert process.stderr is not None
            stderr = BufferedByteReceiveStream(process.stderr)
            match = None
            while match is None:
                match = _URL.search(await stderr.receive_until(b"\n", 1 << 16))
            url = match.group(1).decode()
            async with http_session(url, notices_a, seen_a) as a, http_session(url, notices_b, seen_b) as b:
                # A server-wide level would leave both at "warning" (the last one set), and A would get nothing.
                await set_level(a, "info")
                await set_level(b, "warning")
                await b.call_tool("delegate_b", {"task": "x", "run_in_background": True})
                await a.call_tool("delegate_a", {"task": "x", "run_in_background": True})
                await wait_for_file(tmp_path / "b.ready")
                await wait_for_file(tmp_path / "a.ready")
                # B's job settles first (unread, so it is announced); job_list reads no output.
                (tmp_path / "b.go").touch()
                await until_settled(b, "subagent-1")
                (tmp_path / "a.go").touch()
                with anyio.move_on_after(_NOTICE_WAIT_S):
                    await seen_a.wait()
                with anyio.move_on_after(_SETTLE_S):
                    await seen_b.wait()
            process.terminate()
            returncode = await process.wait()
    assert notices_a == [
        "background job subagent-2 (subagent: a) finished [status: completed]. Read its output with job_output."
    ]
    assert notices_b == []
    assert returncode == 0
