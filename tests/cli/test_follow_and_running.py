"""``runs show --follow`` and ``runs list --running`` through the installed console script, against real writers.

A ``subagent-host run`` in another process on the fake ACP agent (hanging after its text) is followed: its text
appears before the run ends, and the follow exits at ``run/end``. A transcript written by hand through the host's
own ``TranscriptWriter`` (the writer a run uses) pins the edges: a run with nothing beyond ``run/start``, a record
appended in two halves, a writer that stops without ``run/end``, and Ctrl-C.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from host.records import encode_line
from host.records._paths import ensure_runs_dir
from host.records._writer import TranscriptWriter
from tests._provider_helpers import wait_for_ready_marker
from tests.cli._helpers import CLI_TIMEOUT_S, acp_entry, write_config
from tests.cli._script import SCRIPT, run_script, script_env

pytestmark = pytest.mark.anyio

_RUN_ID = "0f0f0f0f-1111-2222-3333-444455556666"


async def _open(*args: str, tmp_path: Path) -> Process:
    return await anyio.open_process([SCRIPT, *args], cwd=tmp_path, env=script_env(tmp_path), stdin=subprocess.DEVNULL)


async def _read_until(stream: BufferedByteReceiveStream, seen: bytearray, marker: bytes) -> None:
    """Read ``stream`` into ``seen`` until ``marker`` is in it (callers bound this with ``fail_after``)."""
    while marker not in seen:
        seen += await stream.receive()


def _running_ids(tmp_path: Path, state: Path) -> list[str]:
    done = run_script("runs", "list", "--running", "--json", "--state-dir", str(state), cwd=tmp_path,
                      env=script_env(tmp_path))  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [run["run_id"] for run in json.loads(done.stdout)["runs"]]


def _record(seq: int, record_type: str, data: dict[str, Any]) -> str:
    return encode_line({"seq": seq, "type": record_type, "time": "2026-12-04T10:00:00.000Z", "data": data})


_START: dict[str, Any] = {
    "run_id": _RUN_ID,
    "provider": "hand",
    "kind": "acp",
    "cwd": "/w",
    "command": "x",
    "args": [],
    "host_version": "0",
}


def _hand_writer(state: Path) -> TranscriptWriter:
    writer = TranscriptWriter.create(ensure_runs_dir(state), _RUN_ID)
    writer.write(_record(0, "run/start", _START))
    return writer


async def test_follow_shows_a_run_of_another_process_as_it_streams_and_exits_at_run_end(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    entry = acp_entry(MOCK_HANG="1", MOCK_THOUGHT="1", MOCK_TEXT="partial \x1b[31mred", MOCK_READY_FILE=str(ready))
    config = write_config(tmp_path, {"slow": entry})
    state = tmp_path / "state"
    with anyio.fail_after(CLI_TIMEOUT_S * 2):
        run = await _open("run", "--config", str(config), "--state-dir", str(state), "the task", tmp_path=tmp_path)
        async with run:
            await wait_for_ready_marker(ready)
            (run_id,) = _running_ids(tmp_path, state)
            follow = await _open("runs", "show", "--follow", run_id[:8], "--state-dir", str(state), tmp_path=tmp_path)
            async with follow:
                assert follow.stdout is not None
                seen = bytearray()
                await _read_until(BufferedByteReceiveStream(follow.stdout), seen, b"partial")
                # The text is on screen while the run is still running, and the follow is still following.
                assert run.returncode is None and follow.returncode is None
                run.send_signal(signal.SIGINT)
                assert await run.wait() == 130
                seen += b"".join([chunk async for chunk in follow.stdout])
                assert await follow.wait() == 0
        assert _running_ids(tmp_path, state) == []
    text = seen.decode()
    assert text.startswith(f"run {run_id}\nprovider: slow (acp)\ncwd: {tmp_path}\nstarted: ")
    assert "\nprompt:\nthe task\n\nmessage:\n[thinking]\nthinking…\npartial \\x1b[31mred\n[Stopped]\n" in text
    assert text.endswith("\nstop reason: aborted\n")
    assert "\x1b" not in text


async def test_follow_waits_on_a_run_with_only_run_start_and_never_shows_half_a_record(tmp_path: Path) -> None:
    state = tmp_path / "state"
    writer = _hand_writer(state)
    try:
        with anyio.fail_after(CLI_TIMEOUT_S):
            follow = await _open("runs", "show", "--follow", _RUN_ID, "--state-dir", str(state), tmp_path=tmp_path)
            async with follow:
                assert follow.stdout is not None
                stream = BufferedByteReceiveStream(follow.stdout)
                seen = bytearray()
                await _read_until(stream, seen, b"started: ")
                line = _record(1, "chunk", {"type": "text-delta", "index": 0, "text": "whole"})
                writer.write(line[:20])  # half a record: nothing of it may show
                await anyio.sleep(0.3)  # several polls see the half line
                writer.write(line[20:])
                await _read_until(stream, seen, b"whole")
                writer.write(_record(2, "run/end", {"stop_reason": "completed", "duration_ms": 1500}))
                seen += b"".join([chunk async for chunk in follow.stdout])
                assert await follow.wait() == 0
    finally:
        writer.close()
    assert seen.decode() == (
        f"run {_RUN_ID}\nprovider: hand (acp)\ncwd: /w\nstarted: 2026-12-04T10:00:00.000Z\n"
        "\nmessage:\nwhole\n\nduration: 1.5 s\nstop reason: completed\n"
    )


async def test_follow_stops_and_says_incomplete_when_the_writer_lets_go_without_run_end(tmp_path: Path) -> None:
    state = tmp_path / "state"
    writer = _hand_writer(state)
    try:
        with anyio.fail_after(CLI_TIMEOUT_S):
            follow = await _open("runs", "show", "--follow", _RUN_ID, "--state-dir", str(state), tmp_path=tmp_path)
            async with follow:
                assert follow.stdout is not None and follow.stderr is not None
                seen = bytearray()
                await _read_until(BufferedByteReceiveStream(follow.stdout), seen, b"started: ")
                assert _running_ids(tmp_path, state) == [_RUN_ID]
                writer.write('{"seq": 1, "type": "chunk", "da')  # a writer dying mid-line
                writer.close()  # the lock is released without run/end
                seen += b"".join([chunk async for chunk in follow.stdout])
                errors = b"".join([chunk async for chunk in follow.stderr])
                assert await follow.wait() == 0
    finally:
        writer.close()
    assert seen.decode().endswith("started: 2026-12-04T10:00:00.000Z\n\nstop reason: incomplete\n")
    assert errors.decode() == (
        f"subagent-host: run {_RUN_ID} is incomplete: its writer stopped without recording run/end\n"
    )
    assert _running_ids(tmp_path, state) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
async def test_a_signal_ends_the_follow_at_once_with_its_status(tmp_path: Path, signum: signal.Signals) -> None:
    state = tmp_path / "state"
    writer = _hand_writer(state)
    try:
        with anyio.fail_after(CLI_TIMEOUT_S):
            follow = await _open("runs", "show", "--follow", _RUN_ID, "--state-dir", str(state), tmp_path=tmp_path)
            async with follow:
                assert follow.stdout is not None and follow.stderr is not None
                seen = bytearray()
                await _read_until(BufferedByteReceiveStream(follow.stdout), seen, b"started: ")
                follow.send_signal(signum)
                status = await follow.wait()
                errors = b"".join([chunk async for chunk in follow.stderr])
    finally:
        writer.close()
    assert status == 128 + signum
    assert b"Traceback" not in errors, errors.decode()


def test_follow_of_an_unknown_run_exits_1_and_follow_with_json_is_a_usage_error(tmp_path: Path) -> None:
    state = tmp_path / "state"
    _hand_writer(state).close()
    missing = run_script("runs", "show", "--follow", "nope", "--state-dir", str(state), cwd=tmp_path,
                         env=script_env(tmp_path))  # fmt: skip
    assert missing.returncode == 1
    assert missing.stderr.decode() == 'subagent-host: no recorded run matches "nope"\n'
    both = run_script("runs", "show", "--follow", "--json", _RUN_ID, cwd=tmp_path, env=script_env(tmp_path))
    assert both.returncode == 2
    assert json.loads(both.stdout)["error"] == "subagent-host: --follow cannot be combined with --json or --stderr"
    # A finished (here: incomplete) run is shown at once, as runs show would, and the follow ends.
    done = run_script("runs", "show", "--follow", _RUN_ID, "--state-dir", str(state), cwd=tmp_path,
                      env=script_env(tmp_path))  # fmt: skip
    assert done.returncode == 0 and done.stdout.decode().endswith("\nstop reason: incomplete\n")
