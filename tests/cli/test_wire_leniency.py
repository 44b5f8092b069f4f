"""``subagent-host run --json`` reads misbehaving children leniently: junk lines, stray or odd responses, weird
request ids, deep nesting and huge lines each end in one documented JSON object (real CLI, hostile children).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli._helpers import SDK_OK as OK
from tests.cli._helpers import (
    adversarial_entry,
    assert_descendants_gone,
    assert_no_planted_secret,
    json_of,
    run_adversarial,
    without_stderr_tail,
)
from tests.cli._helpers import run_adversary as _run
from tests.cli._helpers import run_object as _run_object
from tests.cli._helpers import sdk_completed as completed
from tests.cli._helpers import sdk_failed as failed
from tests.cli._helpers import sdk_rejected as rejected

pytestmark = pytest.mark.anyio


F = "Subagent failure (provider: ACP; "


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
    # The default 8 MiB output bound would end this run (output-limit); this pins the transport, not the bound.
    status, data = await _run(tmp_path, "long_text", "20", max_output_bytes=64 * 1024 * 1024)
    assert status == 0
    assert data["output"] == [{"type": "text", "text": "y" * (20 * 1024 * 1024)}]


@pytest.mark.parametrize("arg", [None, "no_newline"])
async def test_a_forty_mib_line_ends_the_connection_as_a_transport_failure(tmp_path: Path, arg: str | None) -> None:
    assert await _run(tmp_path, "huge_line", arg) == (
        1,
        _run_object("error", None, F + "stage: prompt; category: transport)"),
    )


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


_INIT_HINT = "providers.dsh-sdk initialize_timeout_ms = 300"
"""The CLI's hint for a handshake that timed out (``--json`` carries it as ``hints``)."""


@pytest.mark.parametrize(
    ("tricks", "settings", "expected", "status"),
    [
        ("garbage", {}, completed(), 0),
        ("dup,responses_before_requests,weird_requests,write_after_final", {}, completed(), 0),
        ("response_first", {}, completed(), 0),
        ("bool_id_init", {"initialize_timeout_ms": 300}, {**rejected("timeout"), "hints": [_INIT_HINT]}, 1),
        ("wrong_id_init", {"initialize_timeout_ms": 300}, {**rejected("timeout"), "hints": [_INIT_HINT]}, 1),
        ("odd_init_result", {}, rejected("protocol"), 1),
        ("huge_line_init", {}, rejected("transport"), 1),
        ("huge_line_prompt", {}, failed("transport"), 1),
        ("odd_prompt_result", {}, failed("protocol"), 1),
        ("exit_after_init", {}, failed("transport"), 1),
        ("killed_after_init", {}, failed("transport"), 1),
        ("close_stdout", {}, failed("transport"), 1),
        ("close_stdin", {}, failed("transport"), 1),
        ("", {"env": {"ADV_DEEP": "500"}}, failed("protocol", OK), 1),
        ("", {"env": {"ADV_DEEP": "900"}}, failed("protocol", OK), 1),
        # Nested past the decoder's own limit: the whole line is skipped as garbage; the deltas remain.
        ("", {"env": {"ADV_DEEP": "100000"}}, completed(), 0),
        ("exit_holding_stdout", {"env": {"ADV_GRANDCHILDREN": "6"}}, failed("transport"), 1),
        ("ignore_signals", {"env": {"ADV_GRANDCHILDREN": "6"}}, completed(), 0),
    ],
    ids=lambda value: value if isinstance(value, str) and value else None,
)
async def test_a_hostile_runtime_yields_one_documented_object_and_leaves_nothing_behind(
    tmp_path: Path, tricks: str, settings: dict[str, Any], expected: dict[str, Any], status: int
) -> None:
    done = await run_adversarial(tmp_path, adversarial_entry(tmp_path, tricks, **settings))
    assert done.returncode == status, done.stderr
    data = without_stderr_tail(json_of(done.stdout))  # the runtime's stderr, the operator's copy, aside
    assert data == expected
    assert_no_planted_secret(json.dumps(data).encode())
    assert_descendants_gone(tmp_path)
