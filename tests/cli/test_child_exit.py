"""Children that exit, close a pipe or fork grandchildren mid-run: the CLI prints the exit facts and leaves no process
of the run behind (ACP and DSH SDK children, through the real CLI).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest

from tests.cli._helpers import (
    adversarial_entry,
    json_of,
    run_adversarial,
)
from tests.cli._helpers import adversary_pids as _recorded_pids
from tests.cli._helpers import run_adversary as _run
from tests.cli._helpers import run_object as _run_object
from tests.cli._helpers import sdk_completed as completed
from tests.cli._helpers import sdk_recorded_pids as recorded_pids
from tests.cli._helpers import wait_all_gone as _wait_all_gone
from tests.sdk_provider._helpers import pid_alive

pytestmark = pytest.mark.anyio


F = "Subagent failure (provider: ACP; "


E = "subagent-acp: " + F


@pytest.mark.parametrize(
    ("arg", "facts"), [("exit", "exit code: 0"), ("signal", "signal: SIGKILL")], ids=["exit-0", "sigkill"]
)
async def test_a_child_that_dies_right_after_initialize_is_a_new_session_process_exit(
    tmp_path: Path, arg: str, facts: str
) -> None:
    expected = {
        "run_id": "<run_id>",
        "provider": "acp",
        "error": E + f"stage: new-session; category: process-exit; {facts})",
        "cause": "failed",
    }
    assert await _run(tmp_path, "exit_after_initialize", arg) == (1, expected)


async def test_a_child_that_closes_stdout_but_lives_is_a_new_session_transport_failure(tmp_path: Path) -> None:
    expected = {
        "run_id": "<run_id>",
        "provider": "acp",
        "error": E + "stage: new-session; category: transport)",
        "cause": "failed",
    }
    assert await _run(tmp_path, "close_stdout_after_initialize") == (1, expected)


async def test_a_child_that_forks_grandchildren_in_and_out_of_its_group_leaves_none_behind(tmp_path: Path) -> None:
    assert await _run(tmp_path, "grandchildren") == (0, _run_object("completed", "ok"))
    with anyio.fail_after(5):
        await _wait_all_gone(_recorded_pids(tmp_path))


@pytest.mark.parametrize("arg", ["group", "setsid"])
async def test_a_child_that_exits_while_a_grandchild_holds_stdout_fails_with_its_exit_facts(
    tmp_path: Path, arg: str
) -> None:
    expected = _run_object("error", "partial", F + "stage: process; category: process-exit; exit code: 5)")
    assert await _run(tmp_path, "exit_with_grandchild_on_stdout", arg) == (1, expected)
    with anyio.fail_after(5):
        await _wait_all_gone(_recorded_pids(tmp_path))


async def test_a_double_forked_daemon_of_the_runtime_does_not_survive_the_run(tmp_path: Path) -> None:
    done = await run_adversarial(tmp_path, adversarial_entry(tmp_path, "daemon"))
    survivors = [pid for pid in recorded_pids(tmp_path) if pid_alive(pid)]
    for pid in survivors:  # the leak fixture must not turn this known gap into a teardown error
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert done.returncode == 0 and json_of(done.stdout) == completed()
    assert not survivors
