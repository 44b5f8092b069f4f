"""When the host process dies by any means, SIGKILL included, every process of every run ends within 2 s.

The host (the CLI, or a program using ``Host``) is killed mid-prompt while its child has a grandchild in its
group, in a session of its own, double-forked away, or is itself deaf to stdin EOF; the keeper ends them all.
"""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process

from tests._provider_helpers import wait_for_ready_marker
from tests.conftest import FAKE_ACP_AGENT, PYTHON
from tests.host_death._helpers import (
    ESCAPEE,
    HOST_PROGRAM,
    START_TIMEOUT_S,
    SURVIVAL_BOUND_S,
    acp_entry,
    new_probe,
    probed,
    read_some,
    sdk_entry,
    start,
    survivors_after,
    wait_for_pid_file,
    write_config,
)

pytestmark = pytest.mark.anyio

MidPrompt = Callable[[Process, Path], Awaitable[object]]


def _acp_entry_with(kind: str, tmp_path: Path) -> dict[str, Any]:
    """An ACP entry that hangs mid-prompt (its ready file says so) with a SIGTERM-deaf descendant of ``kind``."""
    env = {"MOCK_HANG": "1", "MOCK_READY_FILE": str(tmp_path / "ready")}
    pid_file = str(tmp_path / "pid")
    if kind == "doublefork":
        env |= {"ESCAPEE_MODE": kind, "ESCAPEE_PID_FILE": pid_file}
        return acp_entry(env, args=[str(ESCAPEE), str(FAKE_ACP_AGENT)])
    env["MOCK_GRANDCHILD_PID_FILE"] = pid_file
    if kind == "setsid":
        env["MOCK_GRANDCHILD_SETSID"] = "1"
    if kind == "eof_deaf":
        env["MOCK_IGNORE_EOF"] = "1"
    return acp_entry(env)


async def _ready_file(_host: Process, tmp_path: Path) -> None:
    await wait_for_ready_marker(tmp_path / "ready")


async def _streamed_chunk(host: Process, _tmp_path: Path) -> None:
    assert await read_some(host)


async def _kill_mid_prompt(argv: list[str], tmp_path: Path, sig: signal.Signals, mid_prompt: MidPrompt) -> list[int]:
    """Start the host, wait until its run is mid-prompt with the descendant planted, kill it; what survived."""
    probe = new_probe()
    with anyio.fail_after(START_TIMEOUT_S):
        async with await start(argv, probe, tmp_path) as host:
            descendant = await wait_for_pid_file(tmp_path / "pid")
            await mid_prompt(host, tmp_path)
            alive = {proc.pid for proc in probed(probe)}
            assert descendant in alive and len(alive) >= 2, alive  # the child and its descendant, at least
            host.send_signal(sig)
            deadline = anyio.current_time() + SURVIVAL_BOUND_S
            assert await host.wait() == -sig
    return await survivors_after(probe, deadline)


@pytest.mark.parametrize("kind", ["group", "setsid", "eof_deaf", "doublefork"])
async def test_a_sigkilled_cli_leaves_no_process_of_an_acp_run(tmp_path: Path, kind: str) -> None:
    config = write_config(tmp_path, _acp_entry_with(kind, tmp_path))
    argv = [PYTHON, "-m", "host", "run", "--config", str(config), "task"]
    assert await _kill_mid_prompt(argv, tmp_path, signal.SIGKILL, _ready_file) == []


async def test_a_sigkilled_cli_leaves_no_process_of_a_dsh_sdk_run(tmp_path: Path) -> None:
    entry = sdk_entry(
        FAKE_HANG_AFTER_CHUNK="1", FAKE_GRANDCHILD_PID_FILE=str(tmp_path / "pid"), FAKE_GRANDCHILD_SETSID="1"
    )
    argv = [PYTHON, "-m", "host", "run", "--config", str(write_config(tmp_path, entry)), "task"]
    assert await _kill_mid_prompt(argv, tmp_path, signal.SIGKILL, _streamed_chunk) == []


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "default-SIGTERM"])
async def test_a_killed_host_program_leaves_no_process_of_its_run(
    tmp_path: Path, backend: str, sig: signal.Signals
) -> None:
    config = write_config(tmp_path, _acp_entry_with("setsid", tmp_path))
    argv = [PYTHON, str(HOST_PROGRAM), str(config), backend]
    assert await _kill_mid_prompt(argv, tmp_path, sig, _ready_file) == []
