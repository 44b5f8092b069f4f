"""Every attempt is recorded and explained to the operator, through the installed console script.

A start that fails is a recorded run with its stderr; a failed ``run`` or ``check`` shows the child's last stderr
lines and where the rest is; a program that does not speak ACP is named as such; ``runs list`` shows a starting run
with a live duration; ``duration_ms`` covers the teardown; ``check`` and ``run`` classify one failure alike.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from tests.cli._helpers import CLI_TIMEOUT_S, acp_entry, cli_env, write_config
from tests.cli._script import SCRIPT
from tests.conftest import PYTHON
from tests.records._helpers import read_jsonl
from tests.sdk_provider._helpers import wait_for_file

pytestmark = pytest.mark.anyio

_REJECTING_RUNTIME = (
    "import sys; sys.stderr.write(\"fatal: config /etc/dsh.toml: model 'fake' unknown\\n\"); sys.exit(3)"
)
"""A DSH SDK runtime that rejects its configuration: one stderr line, exit 3, before ``initialize``."""
_NOT_ACP = (
    "import sys, time; print('Usage: agent [--acp]'); print('  --acp  speak ACP'); sys.stdout.flush(); time.sleep(60)"
)
"""A program that prints its usage to stdout and waits: the everyday forgotten ``--acp``."""
_NEEDS_KEY = (
    "import os, sys; sys.stderr.write('no API key\\n') if 'DEMO_API_KEY' not in os.environ else None; sys.exit(2)"
)
_ID = "[0-9a-f-]{36}"


def _entry(code: str, kind: str = "acp", **fields: Any) -> dict[str, Any]:
    return {"kind": kind, "command": PYTHON, "args": ["-c", code], "dispose_eof_grace_ms": 300, **fields}


async def _script(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[bytes]:
    with anyio.fail_after(CLI_TIMEOUT_S):
        return await anyio.run_process([SCRIPT, *args], cwd=cwd, env={**cli_env(), **env}, check=False)


def _records(state: Path, run_id: str) -> list[dict[str, Any]]:
    return read_jsonl(state / "runs" / f"{run_id}.jsonl")


async def test_a_runtime_that_rejects_its_config_is_a_recorded_run_whose_cause_the_operator_sees(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, {"dsh": _entry(_REJECTING_RUNTIME, kind="dsh-sdk")})
    state = tmp_path / "state"
    done = await _script("run", "--config", str(config), "--state-dir", str(state), "the task", cwd=tmp_path)
    assert done.returncode == 1
    stderr = done.stderr.decode()
    match = re.search(f"subagent-host: run ({_ID}) did not complete \\(cause: failed\\)\n", stderr)
    assert match, stderr
    run_id = match.group(1)
    # The child's last stderr lines, under one header, then where the whole tail is kept.
    assert (
        "subagent-host: the child's stderr ended with:\nfatal: config /etc/dsh.toml: model 'fake' unknown\n" in stderr
    )
    assert f"hint: subagent-host runs show {run_id} --stderr\n" in stderr
    records = _records(state, run_id)
    assert [r["type"] for r in records] == ["run/start", "prompt", "run/end"]
    end = records[-1]["data"]
    assert end["stop_reason"] == "error" and end["cause"] == "failed" and end["exit_code"] == 3
    assert end["diagnostic"] == "Subagent failure (provider: DSH SDK; stage: initialize; category: transport)"
    assert end["duration_ms"] >= end["spawn_ms"] + end["handshake_ms"]
    shown = await _script("runs", "show", run_id, "--stderr", "--state-dir", str(state), cwd=tmp_path)
    assert "fatal: config /etc/dsh.toml: model 'fake' unknown" in shown.stdout.decode()
    header = (await _script("runs", "show", run_id, "--state-dir", str(state), cwd=tmp_path)).stdout.decode()
    assert "\nstop reason: error\n" in header and "\ncause: failed\n" in header
    listed = await _script("runs", "list", "--json", "--state-dir", str(state), cwd=tmp_path)
    (summary,) = json.loads(listed.stdout)["runs"]
    assert (summary["run_id"], summary["status"], summary["cause"], summary["task"]) == (
        run_id,
        "error",
        "failed",
        "the task",
    )


async def test_check_and_run_json_carry_the_stderr_tail_of_the_failed_start(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"dsh": _entry(_REJECTING_RUNTIME, kind="dsh-sdk")})
    checked = await _script("check", "--config", str(config), "--json", cwd=tmp_path)
    ran = await _script("run", "--config", str(config), "--json", "--no-record", "x", cwd=tmp_path)
    recorded = await _script("run", "--config", str(config), "--json", "x", cwd=tmp_path)
    (check,) = json.loads(checked.stdout)["checks"]
    assert checked.returncode == 1 and check["stderr_tail"][0] == "fatal: config /etc/dsh.toml: model 'fake' unknown"
    assert check["exit_code"] == 3
    # --no-record keeps no stderr file, so there is no tail to show; a recorded run carries it.
    assert "stderr_tail" not in json.loads(ran.stdout)
    obj = json.loads(recorded.stdout)
    assert obj["stderr_tail"][0] == "fatal: config /etc/dsh.toml: model 'fake' unknown"
    assert obj["cause"] == "failed" and obj["hints"] == [f"subagent-host runs show {obj['run_id']} --stderr"]
    # The same failure, classified alike by both.
    assert obj["error"] == "subagent-dsh-sdk: " + check["diagnostic"]


async def test_check_and_run_classify_a_crash_at_initialize_alike(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"acp": acp_entry(MOCK_CRASH_ON_INITIALIZE="1")})
    checked = await _script("check", "--config", str(config), "--json", cwd=tmp_path)
    ran = await _script("run", "--config", str(config), "--json", "x", cwd=tmp_path)
    (check,) = json.loads(checked.stdout)["checks"]
    line = "Subagent failure (provider: ACP; stage: initialize; category: process-exit; exit code: 11)"
    assert check["diagnostic"] == line and check["exit_code"] == 11
    assert json.loads(ran.stdout)["error"] == "subagent-acp: " + line


async def test_a_program_that_does_not_speak_acp_is_named_at_once_and_in_a_hint(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"tool": _entry(_NOT_ACP, initialize_timeout_ms=1000)})
    done = await _script("run", "--config", str(config), "--log-level", "info", "x", cwd=tmp_path)
    stderr = done.stderr.decode()
    hint = (
        "hint: the child wrote 2 line(s) of non-JSON text to stdout; is this command its ACP mode "
        "(for example gemini --acp, fast-agent serve --transport acp)?\n"
    )
    assert done.returncode == 1 and hint in stderr, stderr
    # At info, the first such line is logged as it arrives (before the handshake timed out).
    logged = stderr.index("the child wrote a 20-byte line of non-JSON text to stdout: b'Usage: agent [--acp]'")
    assert logged < stderr.index("category: timeout")
    checked = await _script("check", "--config", str(config), "--json", cwd=tmp_path)
    (check,) = json.loads(checked.stdout)["checks"]
    assert hint.removeprefix("hint: ").rstrip("\n") in check["hints"]


async def test_a_scrubbed_key_is_named_when_the_child_fails_to_start(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"agent": _entry(_NEEDS_KEY)})
    done = await _script("run", "--config", str(config), "--json", "x", cwd=tmp_path, DEMO_API_KEY="k")
    hints = cast("list[str]", json.loads(done.stdout)["hints"])
    assert any(hint.startswith("the host removed DEMO_API_KEY from the child's environment") for hint in hints)


async def test_runs_list_shows_a_starting_run_then_a_running_one_with_a_live_duration(tmp_path: Path) -> None:
    ready, go, prompted = tmp_path / "ready", tmp_path / "go", tmp_path / "prompted"
    entry = acp_entry(
        MOCK_INITIALIZE_READY=str(ready), MOCK_INITIALIZE_GO=str(go), MOCK_HANG="1", MOCK_READY_FILE=str(prompted)
    )
    config = write_config(tmp_path, {"acp": entry})
    state = tmp_path / "state"
    args = ["run", "--config", str(config), "--state-dir", str(state), "--stream-json", "x"]

    async def listed() -> dict[str, Any]:
        done = await _script("runs", "list", "--json", "--state-dir", str(state), cwd=tmp_path)
        (summary,) = json.loads(done.stdout)["runs"]
        return cast("dict[str, Any]", summary)

    with anyio.fail_after(CLI_TIMEOUT_S):
        async with await anyio.open_process([SCRIPT, *args], cwd=tmp_path, env=cli_env()) as process:
            await wait_for_file(ready)  # the agent is parked in `initialize`
            assert process.stdout is not None
            first = (await BufferedByteReceiveStream(process.stdout).receive_until(b"\n", 1 << 20)).decode()
            starting = await listed()
            later = await listed()
            while later["duration_ms"] <= starting["duration_ms"]:  # a live duration grows (bounded by fail_after)
                later = await listed()
            go.write_text("go")
            await wait_for_file(prompted)
            running = await listed()
            process.send_signal(signal.SIGINT)
            await process.wait()
    # --stream-json printed run/start before the handshake was done.
    assert json.loads(first)["type"] == "run/start"
    assert starting["status"] == "starting" and starting["cause"] is None
    assert later["status"] == "starting" and later["duration_ms"] > starting["duration_ms"]  # a live duration
    assert running["status"] == "running"
    assert (await listed())["cause"] == "cancelled"


async def test_runs_list_text_shows_running_and_then_the_cause(tmp_path: Path) -> None:
    prompted = tmp_path / "prompted"
    config = write_config(tmp_path, {"acp": acp_entry(MOCK_HANG="1", MOCK_READY_FILE=str(prompted))})
    state = tmp_path / "state"
    args = ["run", "--config", str(config), "--state-dir", str(state), "x"]
    with anyio.fail_after(CLI_TIMEOUT_S):
        async with await anyio.open_process([SCRIPT, *args], cwd=tmp_path, env=cli_env()) as process:
            await wait_for_file(prompted)
            during = (await _script("runs", "list", "--state-dir", str(state), cwd=tmp_path)).stdout.decode()
            process.send_signal(signal.SIGINT)
            await process.wait()
    after = (await _script("runs", "list", "--state-dir", str(state), cwd=tmp_path)).stdout.decode()
    # Under the header row: ... STATUS  CAUSE  COST  TASK (aligned columns, two spaces or more apart).
    assert during.splitlines()[0].split()[-4:] == ["STATUS", "CAUSE", "COST", "TASK"]
    assert re.fullmatch(f"{_ID}  \\S+  acp +[0-9.]+ m?s  running +- +- +x", during.splitlines()[1]), during
    assert re.fullmatch(f"{_ID}  \\S+  acp +[0-9.]+ m?s  aborted +cancelled +- +x", after.splitlines()[1]), after


async def test_duration_covers_the_teardown_and_the_phases_add_up(tmp_path: Path) -> None:
    # The agent lives past stdin EOF until SIGTERM: the teardown takes the whole EOF grace (300 ms).
    config = write_config(tmp_path, {"acp": acp_entry(MOCK_IGNORE_EOF="1")})
    state = tmp_path / "state"
    done = await _script("run", "--config", str(config), "--state-dir", str(state), "--json", "x", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    records = _records(state, json.loads(done.stdout)["run_id"])
    handshake = next(r["data"] for r in records if r["type"] == "handshake")
    assert set(handshake["timings_ms"]) == {"spawn", "initialize", "session/new"}
    end = records[-1]["data"]
    assert end["teardown_ms"] >= 300
    phases = end["spawn_ms"] + end["handshake_ms"] + end["prompt_ms"] + end["teardown_ms"]
    assert end["duration_ms"] >= end["teardown_ms"] and abs(end["duration_ms"] - phases) <= 5
