"""Scenario 96: the provider against an echo agent written with the official ACP Python SDK (skipped if absent)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import anyio
import pytest

from tests.acp_provider._helpers import PROCESS_TIMEOUT_S, agent_spec, make_request, open_run

ECHO_AGENT = Path(__file__).resolve().parent / "echo_agent.py"

pytestmark = pytest.mark.skipif(importlib.util.find_spec("acp") is None, reason="the official ACP SDK is not installed")


@pytest.mark.anyio
async def test_an_sdk_echo_agent_completes_and_echoes_the_prompt(tmp_path: Path) -> None:
    spec = agent_spec(tmp_path, args=[str(ECHO_AGENT)], eof_grace_ms=2000, grace_ms=500)
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(text="interop hello"), spec) as run:
            result = await run.result()
    assert result.stop_reason == "completed"
    assert "interop hello" in "".join(block["text"] for block in result.output)
