"""An entry's ``timeout_ms`` in ``subagent-host run``: exit 124 with the TOOL_TIMEOUT fields, in ``--json`` and text
mode, during startup and against children that ignore cancel, trap SIGTERM, never read or flood.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.cli._helpers import (
    CLI_TIMEOUT_S,
    acp_entry,
    adversarial_entry,
    assert_descendants_gone,
    assert_no_planted_secret,
    is_gone,
    json_of,
    one_json_object,
    run_adversarial,
    run_cli,
    without_stderr_tail,
    write_config,
)
from tests.cli._helpers import SDK_RUN as RUN
from tests.cli._helpers import run_adversary as _run
from tests.cli._helpers import run_object as _run_object

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
        "cause": "timeout",
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
    # The timeout line, the run id and its cause (the run did not complete), then the hint.
    assert re.search(
        "tool call timed out after 1500ms\n"
        "subagent-host: run [0-9a-f-]{36} did not complete \\(cause: timeout\\)\n"
        "hint: providers.acp timeout_ms = 1500; raise it or pass --timeout-ms N\n$",
        done.stderr.decode(),
    ), done.stderr


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


async def test_a_child_that_closes_its_stdin_and_hangs_ends_on_the_timeout(tmp_path: Path) -> None:
    status, data = await _run(tmp_path, "close_stdin_at_prompt", timeout_ms=800)
    assert (status, data) == (
        124,
        {
            **_run_object("aborted", "partial", cause="timeout"),
            "error_code": "TOOL_TIMEOUT",
            "error": "tool call timed out after 800ms",
            "hints": ["providers.acp timeout_ms = 800; raise it or pass --timeout-ms N"],
        },
    )


async def test_a_child_that_never_reads_stdin_cannot_block_our_prompt_write_past_the_timeout(tmp_path: Path) -> None:
    # The task is larger than a pipe buffer, so writing `session/prompt` blocks until the timeout cancels it.
    status, data = await _run(tmp_path, "never_read_stdin", task="t" * 120_000, timeout_ms=800)
    assert (status, data) == (
        124,
        {
            **_run_object("aborted", None, cause="timeout"),
            "error_code": "TOOL_TIMEOUT",
            "error": "tool call timed out after 800ms",
            "hints": ["providers.acp timeout_ms = 800; raise it or pass --timeout-ms N"],
        },
    )


async def test_a_child_flooding_requests_without_reading_ends_on_the_timeout(tmp_path: Path) -> None:
    status, data = await _run(tmp_path, "flood_requests", timeout_ms=800)
    assert (status, data) == (
        124,
        {
            **_run_object("aborted", None, cause="timeout"),
            "error_code": "TOOL_TIMEOUT",
            "error": "tool call timed out after 800ms",
            "hints": ["providers.acp timeout_ms = 800; raise it or pass --timeout-ms N"],
        },
    )


@pytest.mark.parametrize(
    ("tricks", "expected_output"),
    [
        ("no_read", []),  # the prompt (a 120 kB task) never fits the pipe: our write blocks until the deadline
        ("flood_foreign", []),
        ("flood_stderr", []),
        ("hang_turn", []),
        ("response_first,flood_root", None),  # the partial output is a long run of "x"
    ],
)
async def test_a_runtime_that_never_finishes_ends_on_timeout_ms_with_124(
    tmp_path: Path, tricks: str, expected_output: list[dict[str, Any]] | None
) -> None:
    entry = adversarial_entry(tmp_path, tricks, timeout_ms=500)
    done = await run_adversarial(tmp_path, entry, task="z" * 120_000)
    assert done.returncode == 124, done.stderr
    data = without_stderr_tail(json_of(done.stdout))
    output = data.pop("output")
    assert data == {
        **RUN,
        "stop_reason": "aborted",
        "error_code": "TOOL_TIMEOUT",
        "error": "tool call timed out after 500ms",
        "cause": "timeout",
        "hints": ["providers.dsh-sdk timeout_ms = 500; raise it or pass --timeout-ms N"],
    }
    if expected_output is not None:
        assert output == expected_output
    else:
        assert len(output) == 1 and set(output[0]["text"]) == {"x"}
    assert_no_planted_secret(json.dumps(data).encode())
    assert_descendants_gone(tmp_path)
