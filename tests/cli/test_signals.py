"""SIGINT and SIGTERM to ``subagent-host run``: the result is printed at once, the exit status is 130 or 143, and a
repeated signal during the teardown still kills every process of the run (ACP and DSH SDK children).
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.acp_provider._helpers import wait_for_file
from tests.cli._helpers import ACP_STARTUP_ABORT as _STARTUP_ABORT
from tests.cli._helpers import (
    CLI_TIMEOUT_S,
    acp_entry,
    assert_all_gone,
    assert_descendants_gone,
    descendants,
    json_of,
    signal_at,
    signal_twice,
    sigterm_trapping_config,
    start_cli,
    wait_for_ready_marker,
    write_config,
)
from tests.cli._helpers import SDK_RUN as RUN
from tests.cli._helpers import SDK_START_ABORTED as START_ABORTED
from tests.cli._helpers import run_object as _run_object
from tests.cli._helpers import sdk_completed as completed
from tests.cli._helpers import signal_when_ready as _signal_when_ready
from tests.cli._helpers import wait_all_gone as _wait_all_gone

pytestmark = pytest.mark.anyio

# A start aborted by the signal is a recorded run: its run id and cause.
_ABORTED_START = {"run_id": "<run_id>", "provider": "dsh-sdk", "error": START_ABORTED, "cause": "cancelled"}


async def test_a_second_sigint_during_teardown_of_a_sigterm_trapping_child_still_kills_it(tmp_path: Path) -> None:
    config, ready = sigterm_trapping_config(tmp_path)
    with anyio.fail_after(CLI_TIMEOUT_S):
        async with await start_cli("--config", str(config), "--json", "x", cwd=tmp_path) as process:
            await wait_for_ready_marker(ready)
            children = descendants(process.pid)
            line, returncode = await signal_twice(process, signal.SIGINT)
    assert returncode == 130
    assert json_of(line) == {
        "run_id": "<run_id>",
        "provider": "acp",
        "stop_reason": "aborted",
        "output": [{"type": "text", "text": "partial"}],
        "cause": "cancelled",
    }
    assert children
    assert_all_gone(children)


async def test_a_second_sigint_after_a_startup_abort_still_exits_130(tmp_path: Path) -> None:
    ready, go = tmp_path / "ready", tmp_path / "go"
    config = write_config(tmp_path, {"acp": acp_entry(MOCK_NEWSESSION_READY=str(ready), MOCK_NEWSESSION_GO=str(go))})
    with anyio.fail_after(CLI_TIMEOUT_S):
        async with await start_cli("--config", str(config), "--json", "x", cwd=tmp_path) as process:
            # The agent is parked in `session/new` (its GO file never appears): the run is still starting.
            await wait_for_file(ready)
            children = descendants(process.pid)
            line, returncode = await signal_twice(process, signal.SIGINT)
    assert json_of(line) == {
        "run_id": "<run_id>",  # the aborted start is a recorded run
        "provider": "acp",
        "error": "subagent request was aborted before the ACP child started",
        "cause": "cancelled",
    }
    assert returncode == 130
    assert children
    assert_all_gone(children)


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
    # The bound on the output is far away (256 MiB), so the signal, not the output limit, ends the flood even when
    # a loaded machine delivers it late (the reader takes 8 MiB, the default bound, in a fraction of a second).
    status, data, pids = await _signal_when_ready(
        tmp_path, "flood_updates", [signal.SIGINT], max_output_bytes=256 * 1024 * 1024
    )
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


@pytest.mark.parametrize(
    ("tricks", "stage", "signals", "expected", "status"),
    [
        ("hang_init", "initialize", [signal.SIGINT], _ABORTED_START, 130),
        ("hang_init", "initialize", [signal.SIGTERM], _ABORTED_START, 143),
        (
            "hang_turn",
            "prompt",
            [signal.SIGINT],
            {**RUN, "stop_reason": "aborted", "output": [], "cause": "cancelled"},
            130,
        ),
        (
            "hang_turn",
            "prompt",
            [signal.SIGTERM],
            {**RUN, "stop_reason": "aborted", "output": [], "cause": "cancelled"},
            143,
        ),
        (
            "hang_turn,ignore_signals",
            "prompt",
            [signal.SIGINT, signal.SIGINT],
            {**RUN, "stop_reason": "aborted", "output": [], "cause": "cancelled"},
            130,
        ),
        (
            "hang_turn,ignore_signals",
            "prompt",
            [signal.SIGTERM, signal.SIGINT],
            {**RUN, "stop_reason": "aborted", "output": [], "cause": "cancelled"},
            143,
        ),
        ("response_first,flood_root", "prompt", [signal.SIGINT], None, 130),
    ],
)
async def test_a_signal_at_any_stage_ends_the_run_promptly_with_its_status_and_no_survivor(
    tmp_path: Path,
    tricks: str,
    stage: str,
    signals: list[signal.Signals],
    expected: dict[str, Any] | None,
    status: int,
) -> None:
    data, returncode = await signal_at(tmp_path, tricks, stage, signals, dispose_eof_grace_ms=300)
    assert returncode == status
    if expected is None:
        assert data["stop_reason"] == "aborted" and "diagnostic" not in data and "error" not in data
    else:
        assert data == expected
    assert_descendants_gone(tmp_path)


async def test_sigint_during_the_teardown_of_a_completed_run_prints_the_plain_run_object(tmp_path: Path) -> None:
    data, returncode = await signal_at(tmp_path, "ignore_signals", "shutdown", [signal.SIGINT, signal.SIGINT])
    assert_descendants_gone(tmp_path)
    assert returncode == 130
    assert data == completed()
