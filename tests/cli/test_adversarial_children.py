"""Adversarial ACP children against ``subagent-host run --json``, each run through the real CLI as a subprocess.

Every case checks the one JSON object on stdout, the exit status, the spec's fixed diagnostic lines (never child
text), a bounded run (a signal ends even a child that never answers), and that no process of the run survives:
the autouse leak check covers marked processes, and the pids of spawned grandchildren are checked explicitly.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from tests._provider_helpers import wait_until_gone
from tests.cli._helpers import (
    CLI_TIMEOUT_S,
    cli_env,
    descendants,
    json_of,
    run_cli,
    wait_for_ready_marker,
    write_config,
)
from tests.conftest import PYTHON

pytestmark = pytest.mark.anyio

ADVERSARY = Path(__file__).resolve().parent / "children" / "adversary.py"
F = "Subagent failure (provider: ACP; "
E = "subagent-acp: " + F
SECRET_MARKERS = ("SECRET_TOKEN", "/private/path")


def _config(tmp_path: Path, mode: str, arg: str | None = None, **entry: Any) -> Path:
    args = [str(ADVERSARY), mode] + ([arg] if arg is not None else [])
    base: dict[str, Any] = {
        "kind": "acp",
        "command": PYTHON,
        "args": args,
        "dispose_eof_grace_ms": 200,
        "dispose_grace_ms": 200,
        "env": {"ADV_DIR": str(tmp_path)},
    }
    base.update(entry)
    return write_config(tmp_path, {"acp": base})


async def _run(tmp_path: Path, mode: str, arg: str | None = None, *, task: str = "x", **entry: Any) -> tuple[int, Any]:
    config = _config(tmp_path, mode, arg, **entry)
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await run_cli("--config", str(config), "--json", task, cwd=tmp_path)
    for marker in SECRET_MARKERS:
        assert marker.encode() not in done.stdout
    assert b"Traceback" not in done.stderr, done.stderr[-4000:].decode(errors="replace")
    return done.returncode, json_of(done.stdout)


def _run_object(stop_reason: str, text: str | None, diagnostic: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "run_id": "<run_id>",
        "provider": "acp",
        "stop_reason": stop_reason,
        "output": [] if text is None else [{"type": "text", "text": text}],
    }
    if diagnostic is not None:
        obj["diagnostic"] = diagnostic
    return obj


def _recorded_pids(tmp_path: Path) -> list[int]:
    return [int(line) for line in (tmp_path / "pids").read_text().split()]


async def _wait_all_gone(pids: list[int]) -> None:
    for pid in pids:
        await wait_until_gone(pid)


@pytest.mark.parametrize(
    "mode",
    ["garbage", "wrong_ids", "duplicate_responses", "early_response", "unknown_notifications", "write_after_final"],
)
async def test_lenient_reading_survives_junk_stray_responses_and_late_writes(tmp_path: Path, mode: str) -> None:
    assert await _run(tmp_path, mode) == (0, _run_object("completed", "ok"))


async def test_agent_requests_with_weird_ids_are_answered_only_when_the_id_is_valid(tmp_path: Path) -> None:
    assert await _run(tmp_path, "weird_request_ids") == (0, _run_object("completed", "ok"))
    answers = [json.loads(line) for line in (tmp_path / "answers").read_text().splitlines()]
    not_found = {"code": -32601, "message": "Method not found"}
    cancelled = {"outcome": {"outcome": "cancelled"}}
    assert answers == [
        {"jsonrpc": "2.0", "id": 10**30, "error": not_found},
        {"jsonrpc": "2.0", "id": -1, "error": not_found},
        {"jsonrpc": "2.0", "id": "x" * 5000, "error": not_found},
        {"jsonrpc": "2.0", "id": "", "error": not_found},
        {"jsonrpc": "2.0", "id": 0, "error": not_found},
        {"jsonrpc": "2.0", "id": 7, "result": cancelled},
        {"jsonrpc": "2.0", "id": 8, "result": cancelled},
        {"jsonrpc": "2.0", "id": 9, "result": cancelled},
    ]


@pytest.mark.parametrize(("depth", "text"), [(900, "deepok"), (100_000, "ok")])
async def test_deeply_nested_messages_neither_crash_nor_stall_the_reader(tmp_path: Path, depth: int, text: str) -> None:
    assert await _run(tmp_path, "deep_nesting", str(depth)) == (0, _run_object("completed", text))


async def test_a_twenty_mib_chunk_is_delivered_whole(tmp_path: Path) -> None:
    status, data = await _run(tmp_path, "long_text", "20")
    assert status == 0
    assert data["output"] == [{"type": "text", "text": "y" * (20 * 1024 * 1024)}]


@pytest.mark.parametrize("arg", [None, "no_newline"])
async def test_a_forty_mib_line_ends_the_connection_as_a_transport_failure(tmp_path: Path, arg: str | None) -> None:
    assert await _run(tmp_path, "huge_line", arg) == (
        1,
        _run_object("error", None, F + "stage: prompt; category: transport)"),
    )


async def test_a_stderr_flood_of_secrets_never_reaches_stdout(tmp_path: Path) -> None:
    assert await _run(tmp_path, "stderr_flood") == (0, _run_object("completed", "ok"))


_UNKNOWN = F + "stage: prompt; category: unknown; stop reason: unknown)"
_TRANSPORT = F + "stage: prompt; category: transport)"


@pytest.mark.parametrize(
    ("response", "status", "stop_reason", "diagnostic"),
    [
        ('{"jsonrpc":"2.0","id":ID,"result":[]}', 1, "error", _UNKNOWN),
        ('{"jsonrpc":"2.0","id":ID,"result":"end_turn"}', 1, "error", _UNKNOWN),
        ('{"jsonrpc":"2.0","id":ID,"result":null}', 1, "error", _UNKNOWN),
        ('{"jsonrpc":"2.0","id":ID}', 1, "error", _UNKNOWN),
        ('{"jsonrpc":"2.0","id":ID,"result":{"stopReason":["end_turn"]}}', 1, "error", _UNKNOWN),
        ('{"jsonrpc":"2.0","id":ID,"result":{"stopReason":"SECRET_TOKEN /private/path"}}', 1, "error", _UNKNOWN),
        ('{"jsonrpc":"2.0","id":ID,"result":{"stopReason":"end_turn","x":1e400}}', 0, "completed", None),
        ('{"jsonrpc":"2.0","id":ID,"result":{"stopReason":"max_tokens","x":-1e400}}', 4, "max-tokens", None),
        ('{"jsonrpc":"2.0","id":ID,"error":"SECRET_TOKEN"}', 1, "error", _TRANSPORT),
        ('{"jsonrpc":"2.0","id":ID,"error":{"code":-32000.0,"message":"/private/path"}}', 1, "error", _TRANSPORT),
        ('{"jsonrpc":"2.0","id":ID,"error":{"code":true}}', 1, "error", _TRANSPORT),
        (
            '{"jsonrpc":"2.0","id":ID,"result":{"stopReason":"end_turn"},"error":{"code":-32000}}',
            1,
            "error",
            F + "stage: prompt; category: auth-required)",
        ),
    ],
)
async def test_a_prompt_response_of_odd_shape_maps_to_a_fixed_outcome(
    tmp_path: Path, response: str, status: int, stop_reason: str, diagnostic: str | None
) -> None:
    assert await _run(tmp_path, "odd_prompt_response", response) == (
        status,
        _run_object(stop_reason, "ok", diagnostic),
    )


@pytest.mark.parametrize(
    ("arg", "facts"), [("exit", "exit code: 0"), ("signal", "signal: SIGKILL")], ids=["exit-0", "sigkill"]
)
async def test_a_child_that_dies_right_after_initialize_is_a_new_session_process_exit(
    tmp_path: Path, arg: str, facts: str
) -> None:
    expected = {"provider": "acp", "error": E + f"stage: new-session; category: process-exit; {facts})"}
    assert await _run(tmp_path, "exit_after_initialize", arg) == (1, expected)


async def test_a_child_that_closes_stdout_but_lives_is_a_new_session_transport_failure(tmp_path: Path) -> None:
    expected = {"provider": "acp", "error": E + "stage: new-session; category: transport)"}
    assert await _run(tmp_path, "close_stdout_after_initialize") == (1, expected)


async def test_a_child_that_closes_its_stdin_and_hangs_ends_on_the_timeout(tmp_path: Path) -> None:
    status, data = await _run(tmp_path, "close_stdin_at_prompt", timeout_ms=800)
    assert (status, data) == (
        124,
        {
            **_run_object("aborted", "partial"),
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
            **_run_object("aborted", None),
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
            **_run_object("aborted", None),
            "error_code": "TOOL_TIMEOUT",
            "error": "tool call timed out after 800ms",
            "hints": ["providers.acp timeout_ms = 800; raise it or pass --timeout-ms N"],
        },
    )


async def test_a_child_that_forks_grandchildren_in_and_out_of_its_group_leaves_none_behind(tmp_path: Path) -> None:
    assert await _run(tmp_path, "grandchildren") == (0, _run_object("completed", "ok"))
    with anyio.fail_after(5):
        await _wait_all_gone(_recorded_pids(tmp_path))


@pytest.mark.parametrize("arg", ["group", "setsid"])
async def test_a_child_that_exits_while_a_grandchild_holds_stdout_fails_with_its_exit_facts(
    tmp_path: Path, arg: str
) -> None:
    expected = _run_object("error", "partial", F + "stage: process; category: process-exit; exit code: 5)")
    assert await _run(tmp_path, "exit_with_grandchild_on_stdout", arg) == (1, expected)
    with anyio.fail_after(5):
        await _wait_all_gone(_recorded_pids(tmp_path))


_STARTUP_ABORT = {"provider": "acp", "error": "subagent request was aborted before the ACP child started"}


async def _signal_when_ready(
    tmp_path: Path, mode: str, signals: list[signal.Signals], *, task: str = "x", **entry: Any
) -> tuple[int, dict[str, Any], list[int]]:
    """Start the CLI, wait for the child's ready file, send ``signals`` (the rest after the result line)."""
    config = _config(tmp_path, mode, **entry)
    argv = [PYTHON, "-m", "host", "run", "--config", str(config), "--json", task]
    # stderr (the CLI's and the child's) goes to a file: an undrained pipe could block either process.
    with (tmp_path / "stderr").open("wb") as stderr, anyio.fail_after(CLI_TIMEOUT_S):
        async with await anyio.open_process(
            argv, cwd=tmp_path, env=cli_env(), stdin=subprocess.DEVNULL, stderr=stderr
        ) as process:
            await wait_for_ready_marker(tmp_path / "ready")
            pids = [proc.pid for proc in descendants(process.pid)]
            process.send_signal(signals[0])
            assert process.stdout is not None
            # A flooding child's partial output can be large: read the one result line with a generous bound.
            line = await BufferedByteReceiveStream(process.stdout).receive_until(b"\n", 1 << 30)
            for later in signals[1:]:
                process.send_signal(later)
            status = await process.wait()
    assert pids
    stderr_text = (tmp_path / "stderr").read_text(errors="replace")
    assert "Traceback" not in stderr_text, stderr_text[-4000:]
    # Answers to what a dead child left queued must not each log an asyncio "pipe closed by peer" warning.
    assert "asyncio" not in stderr_text, stderr_text[-4000:]
    return status, json_of(line), pids


@pytest.mark.parametrize("mode", ["slow_start", "hang_initialize"])
async def test_sigint_during_startup_prints_the_abort_and_exits_130(tmp_path: Path, mode: str) -> None:
    status, data, pids = await _signal_when_ready(tmp_path, mode, [signal.SIGINT])
    assert (status, data) == (130, _STARTUP_ABORT)
    with anyio.fail_after(5):
        await _wait_all_gone(pids)


@pytest.mark.parametrize(
    ("signals", "status"),
    [
        ([signal.SIGINT], 130),
        ([signal.SIGTERM], 143),
        ([signal.SIGINT, signal.SIGINT], 130),
        ([signal.SIGTERM, signal.SIGINT, signal.SIGTERM], 143),
    ],
)
async def test_signals_during_the_prompt_of_a_signal_deaf_child_still_kill_it(
    tmp_path: Path, signals: list[signal.Signals], status: int
) -> None:
    result = await _signal_when_ready(tmp_path, "ignore_signals", signals)
    assert result[:2] == (status, _run_object("aborted", "partial"))
    with anyio.fail_after(5):
        await _wait_all_gone(result[2])


async def test_sigint_ends_a_child_flooding_updates_forever(tmp_path: Path) -> None:
    status, data, pids = await _signal_when_ready(tmp_path, "flood_updates", [signal.SIGINT])
    assert status == 130
    assert data["stop_reason"] == "aborted" and "diagnostic" not in data
    [block] = data["output"]
    assert block["text"].startswith("partial") and set(block["text"][len("partial") :]) <= {"z"}
    with anyio.fail_after(5):
        await _wait_all_gone(pids)


async def test_a_repeated_sigint_during_a_hanging_prompt_still_exits_130_with_the_partial_output(
    tmp_path: Path,
) -> None:
    status, data, pids = await _signal_when_ready(tmp_path, "hang", [signal.SIGINT, signal.SIGINT])
    assert (status, data) == (130, _run_object("aborted", "partial"))
    with anyio.fail_after(5):
        await _wait_all_gone(pids)


@pytest.mark.parametrize("mode", ["never_read_stdin", "flood_requests"])
async def test_sigint_ends_a_child_that_never_reads_its_stdin(tmp_path: Path, mode: str) -> None:
    # never_read_stdin: the (pipe-sized) task blocks our `session/prompt` write; flood_requests: our answers block.
    status, data, pids = await _signal_when_ready(tmp_path, mode, [signal.SIGINT], task="t" * 120_000)
    assert (status, data) == (130, _run_object("aborted", None))
    with anyio.fail_after(5):
        await _wait_all_gone(pids)
