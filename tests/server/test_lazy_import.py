"""``subagent-host run`` never imports the MCP SDK or the HTTP stack, and ``serve`` answers its first message (in
either protocol era) without importing the MCP SDK, ``mcp_types``, Starlette or uvicorn: the SDK alone costs over a
second of start-up, longer than real MCP clients wait."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.cli._helpers import cli_env
from tests.conftest import PYTHON
from tests.server._helpers import SERVE_TIMEOUT_S, acp_entry, serve_args, write_config

pytestmark = pytest.mark.anyio

_SDK_MODULE = re.compile(r"\|\s+(mcp|mcp_types|starlette|uvicorn)(\.|\s*$)", re.MULTILINE)
_ENVELOPE: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}
_FIRST_MESSAGES: dict[str, dict[str, Any]] = {
    "server/discover": {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": _ENVELOPE}},
    "initialize": {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    },
}


async def test_run_does_not_import_the_mcp_sdk(tmp_path: Path) -> None:
    with anyio.fail_after(SERVE_TIMEOUT_S):
        done = await anyio.run_process(
            [PYTHON, "-X", "importtime", "-m", "host", "run", "--json", "hello"], cwd=tmp_path, env=cli_env()
        )
    imported = done.stderr.decode()
    assert "host.cli" in imported  # importtime did report the CLI's imports
    assert b'"stop_reason": "completed"' in done.stdout
    assert _SDK_MODULE.findall(imported) == []


@pytest.mark.parametrize("first", sorted(_FIRST_MESSAGES))
async def test_serve_answers_its_first_message_without_importing_the_mcp_sdk(tmp_path: Path, first: str) -> None:
    config = write_config(tmp_path, {"echo": acp_entry()})
    line = json.dumps(_FIRST_MESSAGES[first]).encode() + b"\n"
    with anyio.fail_after(SERVE_TIMEOUT_S):
        done = await anyio.run_process(
            [PYTHON, "-X", "importtime", *serve_args(config)], input=line, cwd=tmp_path, env=cli_env()
        )
    imported = done.stderr.decode()
    answer = json.loads(done.stdout.splitlines()[0])
    assert "host.mcp" in imported  # importtime did report serve's imports
    assert answer["id"] == 1 and "result" in answer
    assert _SDK_MODULE.findall(imported) == []
