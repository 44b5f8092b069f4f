"""The progress line: drawn on a stderr terminal only, at most four redraws a second, from counts alone."""

from __future__ import annotations

import os
import pty
import subprocess
import threading
import time
from pathlib import Path

from tests.batch._helpers import CLI_TIMEOUT_S, acp_entry, batch_env, tasks_file, write_config
from tests.cli._helpers import CONSOLE_SCRIPT

_ERASE = b"\r\x1b[K"


def _batch_args(tmp_path: Path) -> list[str]:
    config = write_config(tmp_path, {"fast": acp_entry(), "slow": acp_entry(MOCK_HANG="1", MOCK_TEXT="\x1b[31mred")})
    items: list[dict[str, object]] = [{"id": f"f{n}", "task": "x", "provider": "fast"} for n in range(3)]
    items.append({"id": "s", "task": "x", "provider": "slow", "timeout_ms": 2000})
    tasks = tasks_file(tmp_path / "tasks.jsonl", items)
    return [CONSOLE_SCRIPT, "batch", str(tasks), "-o", str(tmp_path / "out"), "--config", str(config)]


def _read_all(fd: int, into: bytearray) -> None:
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: every writer of the terminal closed it
            return
        if not data:
            return
        into.extend(data)


def test_progress_is_drawn_on_a_terminal_at_most_four_times_a_second(tmp_path: Path) -> None:
    main, terminal = pty.openpty()
    drawn = bytearray()
    reader = threading.Thread(target=_read_all, args=(main, drawn), daemon=True)
    reader.start()
    try:
        started = time.monotonic()
        done = subprocess.run(
            _batch_args(tmp_path),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=terminal,
            env=batch_env(),
            timeout=CLI_TIMEOUT_S,
            check=False,
        )
        elapsed = time.monotonic() - started
    finally:
        os.close(terminal)
        reader.join(timeout=5)
        os.close(main)
    assert done.returncode == 1  # the slow item timed out
    frames = [frame for frame in bytes(drawn).split(_ERASE) if frame.startswith(b"batch")]
    assert frames, bytes(drawn)
    assert len(frames) <= 4 * elapsed + 2, (len(frames), elapsed)
    assert any(b"running 1" in frame for frame in frames)
    assert b"/4 [" in frames[-1] or b"/4" in frames[-1]
    assert b"\x1b[31m" not in drawn and b"red" not in drawn  # child text never reaches the display
    assert b"subagent-host: batch: 4/4 done" in drawn


def test_no_progress_off_a_terminal(tmp_path: Path) -> None:
    done = subprocess.run(
        _batch_args(tmp_path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=batch_env(),
        timeout=CLI_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 1
    assert _ERASE not in done.stderr and b"running" not in done.stderr
    assert done.stderr.decode().splitlines() == [
        "subagent-host: batch: 4/4 done (aborted 1, completed 3); 0 pending; 4 ran, 0 skipped"
    ]
    assert done.stdout == b""
