"""SIGKILL of the host while a worktree's ``setup`` command runs: the keeper ends the setup process (enrolled like
every child) and what it ``setsid()``-ed away, within the survival bound."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import anyio
import pytest

from tests._provider_helpers import wait_until_gone
from tests.cli._helpers import CONSOLE_SCRIPT, cli_env
from tests.conftest import PYTHON
from tests.host_death._helpers import START_TIMEOUT_S, SURVIVAL_BOUND_S, wait_for_pid_file
from tests.workspace._helpers import make_repo, worktree_config

pytestmark = pytest.mark.anyio

# A slow setup: it plants a SIGTERM-deaf helper in a session of its own, then writes its own pid and sleeps.
_SLOW_SETUP = """
import os, signal, sys, time
def write(path, pid):
    with open(path + ".tmp", "w") as handle:
        handle.write(str(pid))
    os.replace(path + ".tmp", path)
if os.fork() == 0:
    os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    write(sys.argv[2], os.getpid())
    time.sleep(600)
    os._exit(0)
write(sys.argv[1], os.getpid())
time.sleep(600)
"""


async def test_sigkill_of_the_host_during_setup_ends_the_setup_process(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    setup_pid, helper_pid = tmp_path / "setup.pid", tmp_path / "helper.pid"
    config = worktree_config(
        tmp_path,
        repo,
        {"child": {}},
        setup=[PYTHON, "-c", _SLOW_SETUP, str(setup_pid), str(helper_pid)],
        setup_timeout_ms=600_000,
    )
    process = await anyio.open_process(
        [CONSOLE_SCRIPT, "run", "--config", str(config), "--state-dir", str(tmp_path / "state"), "go"],
        cwd=tmp_path,
        env=cli_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with anyio.fail_after(START_TIMEOUT_S):
            pids = [await wait_for_pid_file(setup_pid), await wait_for_pid_file(helper_pid)]
        os.kill(process.pid, signal.SIGKILL)
        await process.wait()
        with anyio.fail_after(SURVIVAL_BOUND_S + 3):
            for pid in pids:
                await wait_until_gone(pid)
    finally:
        with anyio.CancelScope(shield=True):
            await process.aclose()
        for pid_file in (setup_pid, helper_pid):
            if pid_file.exists():  # never leave a survivor behind, whatever the outcome
                try:
                    os.kill(int(pid_file.read_text()), signal.SIGKILL)
                except ProcessLookupError:
                    pass
