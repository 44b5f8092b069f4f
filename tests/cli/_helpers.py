"""Drive ``subagent-host run`` as a real subprocess (``python -m host``) with TOML configs written to ``tmp_path``.

The CLI never sees the test's ``MOCK_*`` switches or ``SUBAGENT_HOST_CONFIG``; ``json_of`` checks stdout is one JSON
object led by ``"schema": 1`` (which it removes, so expectations pin the rest) and normalizes its random ``run_id``
to ``<run_id>``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import anyio
import psutil
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from tests._provider_helpers import is_gone as is_gone
from tests._provider_helpers import wait_for_ready_marker as wait_for_ready_marker
from tests.conftest import FAKE_ACP_AGENT, PYTHON, REPO_ROOT

# Two interpreter cold starts (the CLI and its child) plus the handshake: generous on a loaded CI box.
CLI_TIMEOUT_S = 30


def write_config(tmp_path: Path, entries: Mapping[str, Mapping[str, Any]]) -> Path:
    """Write a TOML config with one ``[providers.<name>]`` table per entry (flat values and one ``env`` table)."""
    lines: list[str] = []
    for name, entry in entries.items():
        lines.append(f'[providers."{name}"]')
        for key, value in entry.items():
            if key != "env":
                lines.append(f"{key} = {json.dumps(value)}")
        lines.append(f'[providers."{name}".env]')
        lines.extend(f"{key} = {json.dumps(value)}" for key, value in entry.get("env", {}).items())
    path = tmp_path / "subagent-host.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def acp_entry(**env: str) -> dict[str, Any]:
    """An ``acp`` entry on the fake agent with fast teardown graces."""
    return {
        "kind": "acp",
        "command": PYTHON,
        "args": [str(FAKE_ACP_AGENT)],
        "dispose_eof_grace_ms": 300,
        "dispose_grace_ms": 300,
        "env": env,
    }


def cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCK_") and k != "SUBAGENT_HOST_CONFIG"}
    env["PYTHONPATH"] = str(REPO_ROOT)
    return env


async def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return await anyio.run_process([PYTHON, "-m", "host", "run", *args], cwd=cwd, env=cli_env(), check=False)


async def start_cli(*args: str, cwd: Path) -> Process:
    return await anyio.open_process(
        [PYTHON, "-m", "host", "run", *args], cwd=cwd, env=cli_env(), stdin=subprocess.DEVNULL
    )


async def read_line(process: Process) -> bytes:
    assert process.stdout is not None
    return await BufferedByteReceiveStream(process.stdout).receive_until(b"\n", 1 << 20)


def one_json_object(stdout: bytes) -> dict[str, Any]:
    """The single line of ``stdout``, parsed as a JSON object, whose leading ``"schema": 1`` is checked and removed."""
    lines = stdout.decode().splitlines()
    assert len(lines) == 1, lines
    data = cast("dict[str, Any]", json.loads(lines[0]))
    assert isinstance(data, dict)
    assert next(iter(data), None) == "schema" and data.pop("schema") == 1, data
    return data


def json_of(stdout: bytes) -> dict[str, Any]:
    """``one_json_object`` with a present ``run_id`` checked non-empty and replaced by ``<run_id>``."""
    data = one_json_object(stdout)
    if "run_id" in data:
        assert isinstance(data["run_id"], str) and data["run_id"]
        data["run_id"] = "<run_id>"
    return data


def descendants(pid: int) -> list[psutil.Process]:
    return psutil.Process(pid).children(recursive=True)


def assert_all_gone(processes: list[psutil.Process]) -> None:
    for proc in processes:
        try:
            assert proc.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            pass


def sigterm_trapping_config(tmp_path: Path) -> tuple[Path, Path]:
    """A config whose child hangs after ``partial`` and traps SIGTERM, and its ready file."""
    ready = tmp_path / "ready"
    entry = acp_entry(MOCK_HANG="1", MOCK_TEXT="partial", MOCK_TRAP_SIGTERM="1", MOCK_READY_FILE=str(ready))
    # A long EOF rung keeps the ladder busy while the second signal arrives.
    entry["dispose_eof_grace_ms"] = 1000
    return write_config(tmp_path, {"acp": entry}), ready


async def signal_twice(process: Process, first: signal.Signals) -> tuple[bytes, int]:
    """Send ``first``, read the result line, then SIGINT during the teardown; the line and the exit status."""
    process.send_signal(first)
    line = await read_line(process)
    process.send_signal(signal.SIGINT)
    return line, await process.wait()
