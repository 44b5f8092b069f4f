"""The CLI on a terminal (status line, neutralised child text), with a blocked, broken or closed stdout, and under
signals from the first instant (SIGHUP included): the installed script, real processes, real signals."""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from tests.cli._helpers import CLI_TIMEOUT_S, acp_entry, assert_all_gone, write_config
from tests.cli._script import PYTHON, SCRIPT, operator_config, script_env, signal_mask


def _run_on_pty(args: list[str], *, cwd: Path, env: dict[str, str]) -> tuple[int, bytes]:
    """Run the script with stdout and stderr on one pseudo-terminal; its exit status and everything it wrote."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [SCRIPT, *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower
    )
    os.close(follower)
    written = bytearray()
    deadline = time.monotonic() + CLI_TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], deadline - time.monotonic())
            if not ready:
                break
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not chunk:
                break
            written += chunk
        return process.wait(timeout=CLI_TIMEOUT_S), bytes(written)
    finally:
        os.close(leader)
        if process.poll() is None:
            process.kill()
            process.wait()


def test_on_a_terminal_child_control_sequences_are_neutralised_and_a_status_line_is_drawn(tmp_path: Path) -> None:
    config = operator_config(tmp_path, "escape")
    status, written = _run_on_pty(["run", "--config", str(config), "x"], cwd=tmp_path, env=script_env(tmp_path))
    assert status == 0
    text = written.decode("utf-8", "replace")
    # The child's OSC 52 (clipboard), screen clear, C1 CSI and carriage return arrive as visible escapes.
    assert "a\\x1b]52;c;aGk=\\x07b\\x1b[2Jc\\x9b31m\\x0dd\tz" in text
    assert "\x1b]52" not in text and "\x1b[2J" not in text and "\x9b" not in text
    assert "subagent-host: op " in text  # the status line: provider, state, elapsed


def test_on_a_terminal_stream_json_and_runs_show_json_escape_child_control_characters(tmp_path: Path) -> None:
    config = operator_config(tmp_path, "escape")
    state = tmp_path / "state"
    env = script_env(tmp_path)
    run = ["run", "--config", str(config), "--state-dir", str(state), "--stream-json", "x"]
    status, streamed = _run_on_pty(run, cwd=tmp_path, env=env)
    assert status == 0
    (transcript,) = (state / "runs").glob("*.jsonl")
    show = ["runs", "show", transcript.stem, "--json", "--state-dir", str(state)]
    shown_status, shown = _run_on_pty(show, cwd=tmp_path, env=env)
    assert shown_status == 0
    for written in (streamed, shown):
        text = written.decode("utf-8", "replace")
        assert "\\u009b31m" in text  # the child's C1 CSI, as a JSON escape
        assert "\x9b" not in text and "\x1b]52" not in text and "\x1b[2J" not in text


def _read_screen_until(leader: int, screen: bytearray, shown: bytes, *, also: Path | None = None) -> None:
    """Append what the terminal shows to ``screen`` until ``shown`` is on it (and ``also`` exists); bounded."""
    deadline = time.monotonic() + CLI_TIMEOUT_S
    while shown not in screen or (also is not None and not also.exists()):
        assert time.monotonic() < deadline, f"{shown!r} never shown: {bytes(screen)!r}"
        ready, _, _ = select.select([leader], [], [], 0.05)
        if ready:
            chunk = os.read(leader, 65536)
            assert chunk, f"the terminal closed before {shown!r} was shown: {bytes(screen)!r}"
            screen += chunk


def test_on_a_terminal_the_status_line_shows_handshake_from_the_spawn_until_the_child_answered(tmp_path: Path) -> None:
    at_initialize, go, prompted = tmp_path / "at-initialize", tmp_path / "go", tmp_path / "prompted"
    # The child holds its answer to `initialize` until `go` exists, then hangs in the prompt (state `running`).
    entry = acp_entry(
        MOCK_INITIALIZE_READY=str(at_initialize), MOCK_INITIALIZE_GO=str(go), MOCK_HANG="1",
        MOCK_READY_FILE=str(prompted),
    )  # fmt: skip
    config = write_config(tmp_path, {"op": entry})
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [SCRIPT, "run", "--config", str(config), "x"],
        cwd=tmp_path, env=script_env(tmp_path), stdin=subprocess.DEVNULL, stdout=follower, stderr=follower,
    )  # fmt: skip
    os.close(follower)
    screen = bytearray()
    try:
        _read_screen_until(leader, screen, b"subagent-host: op handshake ", also=at_initialize)
        assert b"subagent-host: op running " not in screen
        go.write_text("go")
        _read_screen_until(leader, screen, b"subagent-host: op running ", also=prompted)
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=CLI_TIMEOUT_S) == 130
    finally:
        go.write_text("go")
        os.close(leader)
        if process.poll() is None:
            process.kill()
            process.wait()
    assert screen.index(b"subagent-host: op handshake ") < screen.index(b"subagent-host: op running ")


def test_off_a_terminal_there_is_no_status_line_and_child_text_is_verbatim(tmp_path: Path) -> None:
    config = operator_config(tmp_path, "escape")
    done = subprocess.run(
        [SCRIPT, "run", "--config", str(config), "x"],
        cwd=tmp_path, env=script_env(tmp_path), capture_output=True, timeout=CLI_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0
    assert done.stdout == "a\x1b]52;c;aGk=\x07b\x1b[2Jc\x9b31m\rd\tz\n".encode()
    assert b"\x1b[K" not in done.stderr


def _descendants_when_ready(process: subprocess.Popen[bytes], ready: Path) -> list[psutil.Process]:
    deadline = time.monotonic() + CLI_TIMEOUT_S
    while not ready.exists():
        assert time.monotonic() < deadline, "the child never became ready"
        assert process.poll() is None, process.returncode
        time.sleep(0.02)
    return psutil.Process(process.pid).children(recursive=True)


def test_sighup_tears_down_an_eof_deaf_child_and_exits_129(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    entry = acp_entry(MOCK_HANG="1", MOCK_TEXT="partial", MOCK_IGNORE_EOF="1", MOCK_READY_FILE=str(ready))
    config = write_config(tmp_path, {"acp": entry})
    process = subprocess.Popen(
        [SCRIPT, "run", "--config", str(config), "--json", "x"],
        cwd=tmp_path, env=script_env(tmp_path), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    children = _descendants_when_ready(process, ready)
    assert children
    process.send_signal(signal.SIGHUP)
    out, err = process.communicate(timeout=CLI_TIMEOUT_S)
    assert process.returncode == 129, err
    assert json.loads(out)["provider"] == "acp"
    assert b"Traceback" not in err
    assert_all_gone(children)


@pytest.mark.parametrize("sent", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_still_ends_a_run_whose_stdout_nobody_reads(tmp_path: Path, sent: signal.Signals) -> None:
    ready = tmp_path / "ready"
    # 8 MiB of text fills any pipe buffer: the CLI's stdout blocks while the child hangs after it.
    entry = acp_entry(MOCK_HANG="1", MOCK_HUGE_CHUNK_MIB="8", MOCK_READY_FILE=str(ready))
    config = write_config(tmp_path, {"acp": entry})
    reader, writer = os.pipe()
    try:
        process = subprocess.Popen(
            [SCRIPT, "run", "--config", str(config), "x"],
            cwd=tmp_path, env=script_env(tmp_path), stdin=subprocess.DEVNULL, stdout=writer,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        os.close(writer)
        children = _descendants_when_ready(process, ready)
        process.send_signal(sent)
        status = process.wait(timeout=CLI_TIMEOUT_S)
    finally:
        os.close(reader)
    assert status == {signal.SIGTERM: 143, signal.SIGINT: 130}[sent]
    assert_all_gone(children)


def test_a_reader_that_goes_away_ends_the_run_quietly_with_141(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"acp": acp_entry(MOCK_HUGE_CHUNK_MIB="4")})
    done = subprocess.run(
        ["bash", "-c", f'"{SCRIPT}" run --config "{config}" x | head -c 1 >/dev/null; echo "${{PIPESTATUS[0]}}" >&2'],
        cwd=tmp_path, env=script_env(tmp_path), capture_output=True, timeout=CLI_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert done.stderr.decode().splitlines() == ["141"]


def test_a_closed_stdout_ends_quietly_with_141(tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", "-c", f'"{SCRIPT}" run --json hello >&-'],
        cwd=tmp_path, env=script_env(tmp_path), capture_output=True, timeout=CLI_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert done.returncode == 141
    assert b"Traceback" not in done.stderr and b"Error" not in done.stderr


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_start_up_still_prints_the_json_object_and_exits_with_its_status(
    tmp_path: Path, sent: signal.Signals
) -> None:
    process = subprocess.Popen(
        [SCRIPT, "run", "--json", "hello"],
        cwd=tmp_path, env=script_env(tmp_path), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    wanted = 1 << (signal.SIGHUP - 1)  # the recorder installs SIGHUP last (Python itself installs SIGINT)
    deadline = time.monotonic() + CLI_TIMEOUT_S
    # The entry point catches the signal before it imports host: send it the moment a handler is installed.
    while not signal_mask(process.pid, "SigCgt") & wanted:
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.001)
    process.send_signal(sent)
    out, err = process.communicate(timeout=CLI_TIMEOUT_S)
    assert process.returncode == 128 + sent, err
    assert b"Traceback" not in err
    data = json.loads(out)
    assert data.get("stop_reason") == "aborted" or data["error"].startswith("subagent-host: interrupted by ")


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["run", "--help"], ["check", "--help"]])
def test_version_and_help_import_neither_host_nor_pydantic_nor_psutil(tmp_path: Path, argv: list[str]) -> None:
    probe = (
        "import sys, subagent_host_cli\n"
        "try:\n"
        f"    subagent_host_cli.main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('host', 'pydantic', 'psutil', 'anyio')]\n"
        "sys.stderr.write(repr(heavy))\n"
    )
    done = subprocess.run(
        [PYTHON, "-c", probe], cwd=tmp_path, env=script_env(tmp_path), capture_output=True, timeout=CLI_TIMEOUT_S,
        check=False,
    )  # fmt: skip
    assert done.stderr.decode() == "[]"
