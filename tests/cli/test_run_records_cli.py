"""The CLI's run records, as a user meets them: ``run`` records by default, ``--stream-json``, ``runs list|show|prune``.

Everything goes through the installed ``subagent-host`` console script in a subprocess, with a temporary
``--state-dir``; the CLI SIGKILLed mid-stream leaves a transcript that parses line by line and lists ``incomplete``.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from tests._provider_helpers import wait_until_gone
from tests.cli._helpers import CLI_TIMEOUT_S, acp_entry, cli_env, descendants, write_config
from tests.conftest import FAKE_DSH_RUNTIME, PYTHON
from tests.records._helpers import read_jsonl

pytestmark = pytest.mark.anyio

CONSOLE_SCRIPT = str(Path(sys.executable).parent / "subagent-host")


async def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return await anyio.run_process([CONSOLE_SCRIPT, *args], cwd=cwd, env=cli_env(), check=False)


def _transcripts(state: Path) -> list[Path]:
    return sorted((state / "runs").glob("*.jsonl"))


def _ndjson(stdout: bytes) -> list[dict[str, Any]]:
    return [cast("dict[str, Any]", json.loads(line)) for line in stdout.decode().splitlines()]


def _sdk_entry(**env: str) -> dict[str, Any]:
    return {
        "kind": "dsh-sdk",
        "command": PYTHON,
        "args": [str(FAKE_DSH_RUNTIME)],
        "dispose_eof_grace_ms": 300,
        "dispose_grace_ms": 300,
        "env": env,
    }


@pytest.mark.parametrize("kind", ["acp", "dsh-sdk"])
async def test_stream_json_prints_every_record_in_order_then_the_json_object(tmp_path: Path, kind: str) -> None:
    entry = acp_entry(MOCK_THOUGHT="1", MOCK_TOOL_CALL="1") if kind == "acp" else _sdk_entry(FAKE_TEXT="sdk")
    config = write_config(tmp_path, {"child": entry})
    state = tmp_path / "state"
    with anyio.fail_after(CLI_TIMEOUT_S):
        streamed = await _cli(
            "run", "--config", str(config), "--state-dir", str(state), "--stream-json", "t", cwd=tmp_path
        )
        plain = await _cli("run", "--config", str(config), "--no-record", "--json", "t", cwd=tmp_path)
    assert streamed.returncode == 0, streamed.stderr
    lines = _ndjson(streamed.stdout)
    records, final = lines[:-1], lines[-1]
    assert [record["seq"] for record in records] == list(range(len(records)))
    assert records[0]["type"] == "run/start" and records[1]["type"] == "prompt"
    assert [record["type"] for record in records[-2:]] == ["assistant/message", "run/end"]
    assert any(record["type"] == "chunk" for record in records)
    # The last line is exactly what --json prints (run ids aside), and the live stream is the transcript.
    expected = json.loads(plain.stdout)
    assert list(final) == list(expected) and final["schema"] == 1
    assert {**final, "run_id": None, "session_id": None} == {**expected, "run_id": None, "session_id": None}
    assert final["session_id"] == records[0]["data"]["session_id"] and records[0]["data"]["turn"] == 1
    (transcript,) = _transcripts(state)
    assert transcript.stem == final["run_id"] == records[0]["data"]["run_id"]
    assert read_jsonl(transcript) == records
    assert not (state / "runs").with_name("unexpected").exists()


async def test_text_mode_shows_thinking_and_tool_lines_on_stderr_and_no_record_writes_nothing(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"child": acp_entry(MOCK_THOUGHT="1", MOCK_TOOL_CALL="1")})
    state = tmp_path / "state"
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await _cli("run", "--config", str(config), "--state-dir", str(state), "--no-record", "t", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout.decode() == "mock child answer\n"
    assert done.stderr.decode().splitlines() == [
        "[thinking]",
        "thinking…",
        "[tool] mock tool (read, pending)",
        "[tool] mock tool (read, completed)",
    ]
    assert not state.exists()


async def test_runs_list_show_and_prune_through_the_console_script(tmp_path: Path) -> None:
    entry = acp_entry(MOCK_THOUGHT="1", MOCK_TOOL_CALL="1", MOCK_TEXT="answer \x1b[31mred")
    config = write_config(tmp_path, {"child": entry})
    state = tmp_path / "state"
    tasks = ["first task", "second task " + "y" * 80]
    with anyio.fail_after(CLI_TIMEOUT_S * 2):
        for task in tasks:
            done = await _cli("run", "--config", str(config), "--state-dir", str(state), "--json", task, cwd=tmp_path)
            assert done.returncode == 0
        listed = await _cli("runs", "list", "--state-dir", str(state), "--json", cwd=tmp_path)
        text_list = await _cli("runs", "list", "--state-dir", str(state), "--limit", "1", cwd=tmp_path)
    assert listed.returncode == 0
    runs = json.loads(listed.stdout)
    assert runs["schema"] == 1
    assert [(run["provider"], run["status"], run["task"]) for run in runs["runs"]] == [
        ("child", "completed", tasks[1][:60]),
        ("child", "completed", "first task"),
    ]
    newest = runs["runs"][0]["run_id"]
    header, line = text_list.stdout.decode().splitlines()
    assert header.split() == ["RUN", "ID", "STARTED", "PROVIDER", "DURATION", "STATUS", "CAUSE", "COST", "TASK"]
    assert line.startswith(newest + "  ") and "  child  " in line
    assert re.search(r"  completed +completed +-  " + re.escape(tasks[1][:60]) + "$", line)
    with anyio.fail_after(CLI_TIMEOUT_S):
        shown = await _cli("runs", "show", newest[:8], "--state-dir", str(state), cwd=tmp_path)
        shown_json = await _cli("runs", "show", newest, "--json", "--state-dir", str(state), cwd=tmp_path)
        missing = await _cli("runs", "show", "no-such-run", "--state-dir", str(state), cwd=tmp_path)
    assert shown.returncode == 0
    text = shown.stdout.decode()
    assert text.startswith(f"run {newest}\nprovider: child (acp)\nsession: ")
    assert f" (turn 1)\ncwd: {tmp_path}\nstarted: " in text
    assert "\nstop reason: completed\n" in text and f"\nprompt:\n{tasks[1]}\n" in text
    assert text.endswith("\nmessage:\n[thinking]\nthinking…\n[tool] mock tool (read, completed)\nanswer \\x1b[31mred\n")
    assert "\x1b" not in text
    shown_obj = json.loads(shown_json.stdout)
    assert shown_obj["schema"] == 1 and shown_obj["status"] == "completed"
    assert shown_obj["records"] == read_jsonl(state / "runs" / f"{newest}.jsonl")
    assert missing.returncode == 1 and b"no recorded run matches" in missing.stderr
    with anyio.fail_after(CLI_TIMEOUT_S):
        pruned = await _cli("runs", "prune", "--keep", "1", "--state-dir", str(state), cwd=tmp_path)
    assert pruned.returncode == 0 and pruned.stdout.decode() == "removed 1 run(s)\n"
    assert [path.stem for path in _transcripts(state)] == [newest]


async def test_cli_sigkilled_mid_stream_leaves_a_parsable_prefix_listed_incomplete(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    entry = acp_entry(MOCK_HANG="1", MOCK_THOUGHT="1", MOCK_TEXT="partial", MOCK_READY_FILE=str(ready))
    config = write_config(tmp_path, {"child": entry})
    state = tmp_path / "state"
    process = await anyio.open_process(
        [CONSOLE_SCRIPT, "run", "--config", str(config), "--state-dir", str(state), "t"],
        cwd=tmp_path,
        env=cli_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with anyio.fail_after(CLI_TIMEOUT_S):
            # The streamed chunks reach the file within the flush window, while the run is still going.
            await _wait_for_chunks(state, 2)
        children = descendants(process.pid)
    finally:
        process.send_signal(signal.SIGKILL)
        with anyio.fail_after(CLI_TIMEOUT_S):
            await process.wait()
    assert process.returncode == -signal.SIGKILL
    (transcript,) = _transcripts(state)
    raw_lines = transcript.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in raw_lines]  # every line parses
    types = [record["type"] for record in records]
    assert types[:2] == ["run/start", "prompt"] and "chunk" in types and "run/end" not in types
    with anyio.fail_after(CLI_TIMEOUT_S):
        listed = await _cli("runs", "list", "--json", "--state-dir", str(state), cwd=tmp_path)
    assert [run["status"] for run in json.loads(listed.stdout)["runs"]] == ["incomplete"]
    assert transcript.read_text(encoding="utf-8").splitlines() == raw_lines  # never rewritten
    # The orphaned child sees stdin EOF and exits; wait for it so nothing outlives the test.
    with anyio.fail_after(CLI_TIMEOUT_S):
        for child in children:
            await wait_until_gone(child.pid)


async def _wait_for_chunks(state: Path, count: int) -> None:
    """Poll the runs directory until one transcript holds ``count`` chunk records (bounded by the caller)."""
    while True:
        if any(path.read_text(encoding="utf-8").count('"type":"chunk"') >= count for path in _transcripts(state)):
            return
        await anyio.sleep(0.02)


async def test_run_keeps_the_configured_keep_runs(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"child": acp_entry()})
    config.write_text("[host]\nkeep_runs = 1\n" + config.read_text(encoding="utf-8"), encoding="utf-8")
    state = tmp_path / "state"
    run_ids: list[str] = []
    with anyio.fail_after(CLI_TIMEOUT_S * 3):
        for _ in range(3):
            done = await _cli("run", "--config", str(config), "--state-dir", str(state), "--json", "t", cwd=tmp_path)
            assert done.returncode == 0, done.stderr
            run_ids.append(json.loads(done.stdout)["run_id"])
    (kept,) = _transcripts(state)
    assert kept.stem == run_ids[-1]


async def test_runs_prune_names_the_entry_and_file_of_a_config_error(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text('[providers.x]\nkind = "acp"\ncommand = "a"\nbogus = 1\n', encoding="utf-8")
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await _cli("runs", "prune", "--config", str(config), "--state-dir", str(tmp_path / "s"), cwd=tmp_path)
    assert done.returncode == 2
    assert f"(providers.x in {config})" in done.stderr.decode()
