"""Hostile DSH SDK runtimes through the real ``subagent-host run --json``: one documented object, exit status and line.

Each case runs ``children/adversarial_runtime.py`` (tricks selected by ``ADV``) behind the CLI as a subprocess and
checks exactly one JSON object of the documented shape, the documented exit status, the spec's fixed diagnostic,
no planted secret on stdout, a bounded run, and that every descendant the runtime recorded is gone afterwards.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from host._exceptions import SdkProtocolError
from host.sdk_provider.client import MAX_CONTENT_DEPTH, validate_event
from tests.cli._helpers import CLI_TIMEOUT_S, json_of, read_line, run_cli, start_cli, write_config
from tests.conftest import PYTHON
from tests.sdk_provider._helpers import D, R, pid_alive, wait_for_file

pytestmark = pytest.mark.anyio

ADVERSARIAL = Path(__file__).resolve().parent / "children" / "adversarial_runtime.py"
START_ABORTED = "subagent request was aborted before the SDK child started"
RUN: dict[str, Any] = {"run_id": "<run_id>", "provider": "dsh-sdk"}
OK = [{"type": "text", "text": "ok"}]


def completed(output: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {**RUN, "stop_reason": "completed", "output": OK if output is None else output}


def failed(category: str, output: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {**RUN, "stop_reason": "error", "output": output or [], "diagnostic": D("session-run", category)}


def rejected(category: str) -> dict[str, Any]:
    return {"provider": "dsh-sdk", "error": R("initialize", category)}


def adversarial_entry(tmp_path: Path, tricks: str, **settings: Any) -> dict[str, Any]:
    """A ``dsh-sdk`` entry on the adversarial runtime with fast teardown; ``env`` extras go in ``settings["env"]``."""
    env = {"ADV": tricks, "ADV_PIDS": str(tmp_path / "pids"), **settings.pop("env", {})}
    return {
        "kind": "dsh-sdk",
        "command": PYTHON,
        "args": [str(ADVERSARIAL)],
        "shutdown_timeout_ms": 100,
        "dispose_eof_grace_ms": 200,
        "dispose_grace_ms": 200,
        "initialize_timeout_ms": 2000,
        **settings,
        "env": env,
    }


def recorded_pids(tmp_path: Path) -> list[int]:
    path = tmp_path / "pids"
    return [int(line) for line in path.read_text(encoding="utf-8").split()] if path.exists() else []


def assert_descendants_gone(tmp_path: Path) -> None:
    survivors = [pid for pid in recorded_pids(tmp_path) if pid_alive(pid)]
    assert not survivors, f"descendants survived the run: {survivors}"


def assert_no_planted_secret(stdout: bytes) -> None:
    assert b"SECRET_TOKEN" not in stdout and b"/private/path" not in stdout


async def run_adversarial(
    tmp_path: Path, entry: dict[str, Any], task: str = "do it"
) -> subprocess.CompletedProcess[bytes]:
    config = write_config(tmp_path, {"dsh-sdk": entry})
    with anyio.fail_after(CLI_TIMEOUT_S):
        return await run_cli("--config", str(config), "--json", task, cwd=tmp_path)


@pytest.mark.parametrize(
    ("tricks", "settings", "expected", "status"),
    [
        ("garbage", {}, completed(), 0),
        ("dup,responses_before_requests,weird_requests,write_after_final", {}, completed(), 0),
        ("response_first", {}, completed(), 0),
        ("bool_id_init", {"initialize_timeout_ms": 300}, rejected("timeout"), 1),
        ("wrong_id_init", {"initialize_timeout_ms": 300}, rejected("timeout"), 1),
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
    data = json_of(done.stdout)
    hints = data.pop("hints", [])
    assert data == expected
    # Only a handshake timeout has a host-side fix to name: the entry's initialize bound.
    timed_out = "stage: initialize; category: timeout" in str(expected.get("error"))
    assert hints == (["providers.dsh-sdk initialize_timeout_ms = 300"] if timed_out else [])
    assert_no_planted_secret(done.stdout)
    assert_descendants_gone(tmp_path)


async def test_moderately_nested_content_is_delivered_verbatim(tmp_path: Path) -> None:
    done = await run_adversarial(tmp_path, adversarial_entry(tmp_path, "", env={"ADV_DEEP": "40"}))
    assert done.returncode == 0, done.stderr
    output = json_of(done.stdout)["output"]
    value: object = output[1]["value"]
    for _ in range(40):
        assert isinstance(value, list)
        nested = cast(list[object], value)
        assert len(nested) == 1
        value = nested[0]
    assert output[0] == OK[0] and value == "bottom"


async def test_lone_surrogates_in_child_text_keep_stdout_one_valid_json_object(tmp_path: Path) -> None:
    done = await run_adversarial(tmp_path, adversarial_entry(tmp_path, "surrogates"))
    assert done.returncode == 0, done.stderr
    assert json_of(done.stdout) == completed([{"type": "text", "text": "ok lone \ud800 pair-half \ude00 end"}])


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
    data = json_of(done.stdout)
    output = data.pop("output")
    assert data == {
        **RUN,
        "stop_reason": "aborted",
        "error_code": "TOOL_TIMEOUT",
        "error": "tool call timed out after 500ms",
        "hints": ["providers.dsh-sdk timeout_ms = 500; raise it or pass --timeout-ms N"],
    }
    if expected_output is not None:
        assert output == expected_output
    else:
        assert len(output) == 1 and set(output[0]["text"]) == {"x"}
    assert_no_planted_secret(done.stdout)
    assert_descendants_gone(tmp_path)


async def signal_at(
    tmp_path: Path, tricks: str, stage: str, signals: list[signal.Signals], **settings: Any
) -> tuple[dict[str, Any], int]:
    """Start the CLI, wait until the runtime reached ``stage``, send ``signals`` in turn; the object and status."""
    ready = tmp_path / "ready"
    env = {"ADV_READY": str(ready), "ADV_READY_AT": stage, "ADV_GRANDCHILDREN": "4"}
    config = write_config(tmp_path, {"dsh-sdk": adversarial_entry(tmp_path, tricks, env=env, **settings)})
    with anyio.fail_after(CLI_TIMEOUT_S):
        async with await start_cli("--config", str(config), "--json", "task", cwd=tmp_path) as process:
            await wait_for_file(ready)
            process.send_signal(signals[0])
            # Every later signal lands while the teardown ladder runs (the result line is printed first).
            line = await read_line(process) if len(signals) > 1 else b""
            for extra in signals[1:]:
                process.send_signal(extra)
            assert process.stdout is not None
            # Read to EOF before waiting: a large partial output must not block the CLI on a full pipe.
            rest = b"".join([chunk async for chunk in process.stdout])
            returncode = await process.wait()
    return json_of(line + rest), returncode


@pytest.mark.parametrize(
    ("tricks", "stage", "signals", "expected", "status"),
    [
        ("hang_init", "initialize", [signal.SIGINT], {"provider": "dsh-sdk", "error": START_ABORTED}, 130),
        ("hang_init", "initialize", [signal.SIGTERM], {"provider": "dsh-sdk", "error": START_ABORTED}, 143),
        ("hang_turn", "prompt", [signal.SIGINT], {**RUN, "stop_reason": "aborted", "output": []}, 130),
        ("hang_turn", "prompt", [signal.SIGTERM], {**RUN, "stop_reason": "aborted", "output": []}, 143),
        (
            "hang_turn,ignore_signals",
            "prompt",
            [signal.SIGINT, signal.SIGINT],
            {**RUN, "stop_reason": "aborted", "output": []},
            130,
        ),
        (
            "hang_turn,ignore_signals",
            "prompt",
            [signal.SIGTERM, signal.SIGINT],
            {**RUN, "stop_reason": "aborted", "output": []},
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


async def test_a_double_forked_daemon_of_the_runtime_does_not_survive_the_run(tmp_path: Path) -> None:
    done = await run_adversarial(tmp_path, adversarial_entry(tmp_path, "daemon"))
    survivors = [pid for pid in recorded_pids(tmp_path) if pid_alive(pid)]
    for pid in survivors:  # the leak fixture must not turn this known gap into a teardown error
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert done.returncode == 0 and json_of(done.stdout) == completed()
    assert not survivors


def message_event(block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "assistant/message", "seq": 0, "time": 0, "data": {"message": {"content": [block]}}}


def nested_block(levels: int) -> dict[str, Any]:
    """A content block whose nesting (the block itself included) is exactly ``levels`` deep."""
    value: object = "bottom"
    for _ in range(levels - 1):
        value = [value]
    return {"type": "deep", "value": value}


def test_content_nested_up_to_the_bound_passes_and_one_level_more_is_malformed() -> None:
    within = message_event(nested_block(MAX_CONTENT_DEPTH))
    assert validate_event(within) is within
    with pytest.raises(SdkProtocolError) as caught:
        validate_event(message_event(nested_block(MAX_CONTENT_DEPTH + 1)))
    assert str(caught.value).startswith("assistant/message event carried malformed content: {")


def test_a_value_too_deep_to_encode_never_breaks_the_host_only_message() -> None:
    too_deep = message_event(nested_block(100_000))
    with pytest.raises(SdkProtocolError) as caught:
        validate_event(too_deep)
    assert str(caught.value) == "assistant/message event carried malformed content: <unencodable value>"
