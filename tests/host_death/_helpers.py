"""Start a host process whose children carry a per-test probe variable, kill it, and look for what survived.

Every process of the host's runs inherits ``HOST_DEATH_PROBE`` (it is not credential-shaped, so the env scrub
keeps it), whatever group, session or parent it ends up in; the host's own process is excluded by pid.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import anyio
import psutil
from anyio.abc import Process

from tests._provider_helpers import wait_for_file
from tests.conftest import FAKE_ACP_AGENT, FAKE_DSH_RUNTIME, PYTHON, REPO_ROOT

PROBE_NAME = "HOST_DEATH_PROBE"
CHILDREN = Path(__file__).resolve().parent / "children"
ESCAPEE = CHILDREN / "escapee.py"
HOST_PROGRAM = CHILDREN / "host_program.py"
SURVIVAL_BOUND_S = 2.0
"""Every process of every run must be gone this long after the host died."""
# Two interpreter cold starts (the host and its child) plus the handshake, on a loaded two-core box.
START_TIMEOUT_S = 30


def new_probe() -> str:
    return uuid.uuid4().hex


def host_env(probe: str) -> dict[str, str]:
    """The host process's environment: the test's, minus test switches, plus the probe."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCK_") and k != "SUBAGENT_HOST_CONFIG"}
    env["PYTHONPATH"] = str(REPO_ROOT)
    env[PROBE_NAME] = probe
    return env


def acp_entry(env: dict[str, str] | None = None, *, args: list[str] | None = None) -> dict[str, Any]:
    """An ``acp`` entry on the fake agent (or ``args``) with fast teardown graces."""
    return {
        "kind": "acp",
        "command": PYTHON,
        "args": [str(FAKE_ACP_AGENT)] if args is None else args,
        "dispose_eof_grace_ms": 300,
        "dispose_grace_ms": 300,
        "env": env or {},
    }


def sdk_entry(**env: str) -> dict[str, Any]:
    return {
        "kind": "dsh-sdk",
        "command": PYTHON,
        "args": [str(FAKE_DSH_RUNTIME)],
        "shutdown_timeout_ms": 100,
        "dispose_eof_grace_ms": 200,
        "dispose_grace_ms": 200,
        "env": env,
    }


def probed(probe: str) -> list[psutil.Process]:
    """Every live (non-zombie) process that carries ``probe``."""
    found: list[psutil.Process] = []
    me = os.getpid()
    for proc in psutil.process_iter():
        if proc.pid == me:
            continue
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and proc.environ().get(PROBE_NAME) == probe:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


async def survivors_after(probe: str, deadline: float) -> list[int]:
    """Poll until no probed process is left or ``deadline`` (``anyio.current_time()``) passed; the pids left."""
    while True:
        left = [proc.pid for proc in probed(probe)]
        if not left or anyio.current_time() >= deadline:
            return left
        await anyio.sleep(0.02)


async def wait_for_pid_file(path: Path) -> int:
    """The pid a child wrote (atomically) to ``path``; callers bound this with ``fail_after``."""
    return int(await wait_for_file(path))


async def read_some(process: Process) -> bytes:
    """The first bytes the host printed (a streamed chunk: the run is mid-prompt)."""
    assert process.stdout is not None
    return await process.stdout.receive()


async def start(argv: list[str], probe: str, cwd: Path) -> Process:
    return await anyio.open_process(
        argv, cwd=cwd, env=host_env(probe), stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def write_config(tmp_path: Path, entry: dict[str, Any]) -> Path:
    """Write a config with the one entry ``a``."""
    lines = ['[providers."a"]']
    lines.extend(f"{key} = {json.dumps(value)}" for key, value in entry.items() if key != "env")
    lines.append('[providers."a".env]')
    lines.extend(f"{key} = {json.dumps(value)}" for key, value in entry["env"].items())
    path = tmp_path / "subagent-host.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
