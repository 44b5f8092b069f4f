"""``subagent-host run`` never imports the MCP SDK: only ``serve`` pays for it."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest

from tests.cli._helpers import cli_env
from tests.conftest import PYTHON
from tests.server._helpers import SERVE_TIMEOUT_S

pytestmark = pytest.mark.anyio

_SDK_MODULE = re.compile(r"\|\s+(mcp|mcp_types|starlette|uvicorn)(\.|\s*$)", re.MULTILINE)


async def test_run_does_not_import_the_mcp_sdk(tmp_path: Path) -> None:
    with anyio.fail_after(SERVE_TIMEOUT_S):
        done = await anyio.run_process(
            [PYTHON, "-X", "importtime", "-m", "host", "run", "--json", "hello"], cwd=tmp_path, env=cli_env()
        )
    imported = done.stderr.decode()
    assert "host.cli" in imported  # importtime did report the CLI's imports
    assert b'"stop_reason": "completed"' in done.stdout
    assert _SDK_MODULE.findall(imported) == []
