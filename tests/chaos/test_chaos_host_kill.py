"""A host process SIGKILLed mid-run, whose child has every kind of descendant, leaves nothing alive after 2 s.

The child ignores stdin EOF, ``session/cancel`` and SIGTERM, and has a SIGTERM-deaf grandchild in its group, one in
a session of its own and a double-forked daemon; the host is the CLI or a program using ``Host`` (asyncio, trio).
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import anyio
import pytest

from tests._provider_helpers import wait_for_ready_marker
from tests.chaos._batch import CHAOS_CHILD, poll_until, recorded_pids
from tests.conftest import FAKE_ACP_AGENT, PYTHON
from tests.host_death._helpers import (
    HOST_PROGRAM,
    START_TIMEOUT_S,
    SURVIVAL_BOUND_S,
    acp_entry,
    new_probe,
    probed,
    start,
    survivors_after,
    write_config,
)

pytestmark = pytest.mark.anyio

_DESCENDANTS = ["group", "setsid", "doublefork"]


def _plant_script(tmp_path: Path) -> Path:
    script = {
        "agent": str(FAKE_ACP_AGENT),
        "escapees": _DESCENDANTS,
        "env": {
            "MOCK_HANG": "1",
            "MOCK_IGNORE_CANCEL": "1",
            "MOCK_TRAP_SIGTERM": "1",
            "MOCK_READY_FILE": str(tmp_path / "ready"),
        },
    }
    (tmp_path / "chaos.json").write_text(json.dumps(script), encoding="utf-8")
    return write_config(tmp_path, acp_entry(args=[str(CHAOS_CHILD)]))


async def _sigkill_mid_run(argv: list[str], tmp_path: Path) -> list[int]:
    probe = new_probe()
    with anyio.fail_after(START_TIMEOUT_S):
        async with await start(argv, probe, tmp_path) as host:
            await wait_for_ready_marker(tmp_path / "ready")
            await poll_until(lambda: len(recorded_pids(tmp_path)) == 1 + len(_DESCENDANTS))
            recorded = recorded_pids(tmp_path)
            assert recorded <= {proc.pid for proc in probed(probe)}
            host.send_signal(signal.SIGKILL)
            deadline = anyio.current_time() + SURVIVAL_BOUND_S
            assert await host.wait() == -signal.SIGKILL
    return await survivors_after(probe, deadline)


async def test_a_sigkilled_cli_leaves_no_descendant_of_any_kind(tmp_path: Path) -> None:
    config = _plant_script(tmp_path)
    assert await _sigkill_mid_run([PYTHON, "-m", "host", "run", "--config", str(config), "task"], tmp_path) == []


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
async def test_a_sigkilled_host_program_leaves_no_descendant_of_any_kind(tmp_path: Path, backend: str) -> None:
    config = _plant_script(tmp_path)
    assert await _sigkill_mid_run([PYTHON, str(HOST_PROGRAM), str(config), backend], tmp_path) == []
