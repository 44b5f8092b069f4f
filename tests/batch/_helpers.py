"""Batches through the installed ``subagent-host batch`` console script, on the fake ACP agent.

``tasks_file`` writes the JSONL input; ``result_lines`` reads ``results.jsonl`` back, checking every line is whole;
``slow_fast_config`` gives two providers: ``fast`` answers at once, ``slow`` hangs after its chunk (writing a ready
file) until it is cancelled.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncGenerator, Iterable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import anyio
from anyio.abc import Process

from tests.cli._helpers import CLI_TIMEOUT_S, CONSOLE_SCRIPT, acp_entry, cli_env, write_config

__all__ = [
    "CLI_TIMEOUT_S",
    "acp_entry",
    "killed_on_exit",
    "private",
    "result_lines",
    "run_batch",
    "slow_fast_config",
    "start_batch",
    "tasks_file",
    "write_config",
]


def tasks_file(path: Path, items: Iterable[Mapping[str, Any] | str]) -> Path:
    """Write one JSON object (or a raw string) per line."""
    lines = [item if isinstance(item, str) else json.dumps(item) for item in items]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def result_lines(outdir: Path) -> list[dict[str, Any]]:
    """Every line of ``outdir/results.jsonl``, each a whole newline-terminated JSON object."""
    data = (outdir / "results.jsonl").read_bytes()
    assert not data or data.endswith(b"\n"), data[-200:]
    return [cast("dict[str, Any]", json.loads(line)) for line in data.splitlines()]


def slow_fast_config(tmp_path: Path) -> tuple[Path, Path]:
    """A config with ``fast`` and ``slow`` (hangs until cancelled; ``ready`` appears once one is hanging)."""
    ready = tmp_path / "slow-ready"
    slow = acp_entry(MOCK_HANG="1", MOCK_TEXT="partial", MOCK_READY_FILE=str(ready))
    return write_config(tmp_path, {"fast": acp_entry(), "slow": slow}), ready


def batch_env() -> dict[str, str]:
    env = cli_env()
    env.pop("RAY_ADDRESS", None)
    return env


async def run_batch(*args: str, cwd: Path, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``subagent-host batch ARGS`` to its end."""
    with anyio.fail_after(CLI_TIMEOUT_S * 2):
        return await anyio.run_process(
            [CONSOLE_SCRIPT, "batch", *args], cwd=cwd, env=dict(env or batch_env()), check=False
        )


async def start_batch(*args: str, cwd: Path) -> Process:
    """Start ``subagent-host batch ARGS`` (stdout and stderr piped)."""
    return await anyio.open_process(
        [CONSOLE_SCRIPT, "batch", *args], cwd=cwd, env=batch_env(), stdin=subprocess.DEVNULL
    )


@asynccontextmanager
async def killed_on_exit(process: Process) -> AsyncGenerator[Process]:
    """``process``, SIGKILLed and reaped on the way out if it is still running (a failed test must not hang)."""
    async with process:
        try:
            yield process
        finally:
            if process.returncode is None:
                process.kill()


def private(path: Path) -> bool:
    """The file or directory is the operator's alone."""
    return os.stat(path).st_mode & 0o077 == 0
