"""Streamable HTTP on the same server object: a call over loopback through the official client with the bearer
token, and 401 for a request without it."""

from __future__ import annotations

import re
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.cli._helpers import cli_env
from tests.conftest import PYTHON
from tests.server._helpers import SERVE_TIMEOUT_S, acp_entry, serve_args, write_config

pytestmark = pytest.mark.anyio

_TOKEN = "test-token-0123456789"
_URL = re.compile(rb"serving MCP at (http://127\.0\.0\.1:\d+/mcp)")


def status_without_token(url: str) -> int:
    request = urllib.request.Request(url, data=b"{}", headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


async def test_a_call_over_loopback_http_with_the_token_and_401_without_it(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"echo": acp_entry()})
    token_file = tmp_path / "token"
    token_file.write_text(_TOKEN + "\n", encoding="utf-8")
    token_file.chmod(0o600)
    args = serve_args(config, "--http", "127.0.0.1:0", "--auth-token-file", str(token_file))
    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with await anyio.open_process(
            [PYTHON, *args], env=cli_env(), cwd=tmp_path, stdin=subprocess.DEVNULL
        ) as process:
            assert process.stderr is not None
            stderr = BufferedByteReceiveStream(process.stderr)
            line = b""
            while not _URL.search(line):
                line = await stderr.receive_until(b"\n", 1 << 16)
            match = _URL.search(line)
            assert match is not None
            url = match.group(1).decode()
            unauthorized = await anyio.to_thread.run_sync(status_without_token, url)
            http_client = create_mcp_http_client(headers={"Authorization": f"Bearer {_TOKEN}"})
            async with http_client, streamable_http_client(url, http_client=http_client) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    result = await session.call_tool("delegate_echo", {"task": "over http"})
            process.terminate()
            returncode = await process.wait()
    assert unauthorized == 401
    (block,) = result.content
    assert isinstance(block, types.TextContent) and block.text == "over http"
    assert returncode == 0
