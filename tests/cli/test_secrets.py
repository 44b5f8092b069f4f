"""Planted secrets (child stderr, JSON-RPC error payloads, a stderr flood) never reach the CLI's stdout, except as
the child's own stderr under ``stderr_tail`` of a failed run (the operator's copy, docs/behaviour.md#host-hints)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.cli._helpers import (
    CLI_TIMEOUT_S,
    SECRET_MARKERS,
    acp_entry,
    json_of,
    run_cli,
    write_config,
)
from tests.cli._helpers import run_adversary as _run
from tests.cli._helpers import run_object as _run_object

pytestmark = pytest.mark.anyio


ERROR_AGENT = Path(__file__).resolve().parents[1] / "acp_provider" / "children" / "error_agent.py"


E = "subagent-acp: Subagent failure (provider: ACP; "


F = "Subagent failure (provider: ACP; "


@pytest.mark.parametrize(
    ("mode", "expected", "status"),
    [
        (
            "session/prompt:-32000",
            {
                "run_id": "<run_id>",
                "provider": "acp",
                "stop_reason": "error",
                "output": [{"type": "text", "text": "partial"}],
                "diagnostic": F + "stage: prompt; category: auth-required)",
                "cause": "failed",
            },
            1,
        ),
        (
            "session/prompt:-32603",
            {
                "run_id": "<run_id>",
                "provider": "acp",
                "stop_reason": "error",
                "output": [{"type": "text", "text": "partial"}],
                "diagnostic": F + "stage: prompt; category: transport)",
                "cause": "failed",
            },
            1,
        ),
        (
            "initialize:-32000",
            {"run_id": "<run_id>", "provider": "acp", "error": E + "stage: initialize; category: auth-required)"},
            1,
        ),
        (
            "session/new:-32603",
            {"run_id": "<run_id>", "provider": "acp", "error": E + "stage: new-session; category: transport)"},
            1,
        ),
    ],
)
async def test_secrets_in_child_stderr_and_error_payloads_never_reach_json_stdout(
    tmp_path: Path, mode: str, expected: dict[str, Any], status: int
) -> None:
    entry = acp_entry()
    entry["args"] = [str(ERROR_AGENT), mode]
    config = write_config(tmp_path, {"acp": entry})
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await run_cli("--config", str(config), "--json", "x", cwd=tmp_path)
    data = json_of(done.stdout)
    tail: list[str] = data.pop("stderr_tail", [])
    assert any("stderr" in line for line in tail)  # the child's stderr, for the operator
    data.pop("hints", None)
    for marker in SECRET_MARKERS:
        assert marker not in json.dumps(data)
    assert data == {**expected, "cause": "failed"}
    assert done.returncode == status


async def test_a_stderr_flood_of_secrets_never_reaches_stdout(tmp_path: Path) -> None:
    assert await _run(tmp_path, "stderr_flood") == (0, _run_object("completed", "ok"))
