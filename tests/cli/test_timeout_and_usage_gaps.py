"""Acceptance gaps of issue 5 in ``subagent-host run`` found by the audit (real CLI subprocess, real fake agent).

The TOOL_TIMEOUT contract against a child that ignores ``session/cancel``, traps SIGTERM and leaves a ``setsid()``
grandchild; the timeout in text mode and during startup; and the README's promise that ``--json`` prints one JSON
object for every usage or configuration error.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.cli._helpers import CLI_TIMEOUT_S, acp_entry, is_gone, one_json_object, run_cli, write_config

pytestmark = pytest.mark.anyio


async def test_json_timeout_tears_down_a_cancel_ignoring_sigterm_trapping_child_and_its_setsid_grandchild(
    tmp_path: Path,
) -> None:
    pid_file = tmp_path / "grandchild.pid"
    entry = acp_entry(
        MOCK_HANG="1",
        MOCK_TEXT="partial",
        MOCK_IGNORE_CANCEL="1",
        MOCK_TRAP_SIGTERM="1",
        MOCK_READY_FILE=str(tmp_path / "ready"),
        MOCK_GRANDCHILD_PID_FILE=str(pid_file),
        MOCK_GRANDCHILD_SETSID="1",
    )
    entry["timeout_ms"] = 1500
    config = write_config(tmp_path, {"acp": entry})
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await run_cli("--config", str(config), "--json", "x", cwd=tmp_path)
    assert done.returncode == 124, done.stderr
    data = one_json_object(done.stdout)
    assert isinstance(data.pop("run_id"), str)
    assert data == {
        "provider": "acp",
        "stop_reason": "aborted",
        "output": [{"type": "text", "text": "partial"}],
        "error_code": "TOOL_TIMEOUT",
        "error": "tool call timed out after 1500ms",
        "hints": ["providers.acp timeout_ms = 1500; raise it or pass --timeout-ms N"],
    }
    assert is_gone(int(pid_file.read_text()))


async def test_text_mode_timeout_prints_the_partial_output_and_the_timeout_line(tmp_path: Path) -> None:
    entry = acp_entry(MOCK_HANG="1", MOCK_TEXT="partial", MOCK_READY_FILE=str(tmp_path / "ready"))
    entry["timeout_ms"] = 1500
    config = write_config(tmp_path, {"acp": entry})
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await run_cli("--config", str(config), "x", cwd=tmp_path)
    assert done.returncode == 124
    assert done.stdout.decode() == "partial\n"
    assert done.stderr.decode().endswith(
        "tool call timed out after 1500ms\nhint: providers.acp timeout_ms = 1500; raise it or pass --timeout-ms N\n"
    )


async def test_json_timeout_during_startup_exits_124_with_the_timeout_fields(tmp_path: Path) -> None:
    entry = acp_entry(MOCK_NEWSESSION_READY=str(tmp_path / "ready"), MOCK_NEWSESSION_GO=str(tmp_path / "go"))
    entry["timeout_ms"] = 800
    config = write_config(tmp_path, {"acp": entry})
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await run_cli("--config", str(config), "--json", "x", cwd=tmp_path)
    assert done.returncode == 124
    data = one_json_object(done.stdout)
    assert data["provider"] == "acp"
    assert data["error_code"] == "TOOL_TIMEOUT"
    assert data["error"] == "tool call timed out after 800ms"


async def test_json_empty_task_is_a_usage_error_printed_as_one_json_object(tmp_path: Path) -> None:
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await run_cli("--json", "", cwd=tmp_path)
    assert done.returncode == 2
    # README: "With --json, stdout holds exactly one JSON object: ... a usage or config error: {"error": ...}".
    data = one_json_object(done.stdout)
    assert set(data) == {"error"} and isinstance(data["error"], str)


async def test_entries_whose_tool_names_collide_are_a_config_error_not_a_traceback(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"a-b": acp_entry(MOCK_TEXT="x"), "a_b": acp_entry(MOCK_TEXT="y")})
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await run_cli("--config", str(config), "--provider", "a-b", "--json", "x", cwd=tmp_path)
    assert b"Traceback" not in done.stderr, done.stderr.decode()[-2000:]
    assert done.returncode == 2
    data = one_json_object(done.stdout)
    assert set(data) == {"error"} and isinstance(data["error"], str)
