"""A warm session's child does not outlive its host, even a SIGKILLed one: the keeper ends it
(docs/behaviour.md#sessions, docs/behaviour.md#process-keeper)."""

from __future__ import annotations

import signal
from pathlib import Path

import anyio
import pytest

from tests.conftest import FAKE_ACP_AGENT, PYTHON
from tests.host_death._helpers import (
    START_TIMEOUT_S,
    SURVIVAL_BOUND_S,
    acp_entry,
    new_probe,
    probed,
    read_some,
    start,
    survivors_after,
    write_config,
)

pytestmark = pytest.mark.anyio

WARM_HOST = Path(__file__).resolve().parent / "children" / "warm_host.py"


async def test_sigkill_of_the_host_ends_its_warm_session_child(tmp_path: Path) -> None:
    probe = new_probe()
    config = write_config(tmp_path, acp_entry({"MOCK_TEXT": "warm"}))
    process = await start([PYTHON, str(WARM_HOST), str(config)], probe, tmp_path)
    try:
        with anyio.fail_after(START_TIMEOUT_S):
            assert (await read_some(process)).startswith(b"ready")
        warm = [proc for proc in probed(probe) if str(FAKE_ACP_AGENT) in " ".join(proc.cmdline())]
        process.send_signal(signal.SIGKILL)
        await process.wait()
        left = await survivors_after(probe, anyio.current_time() + SURVIVAL_BOUND_S)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert len(warm) == 1  # the session kept its child after the turn
    assert left == []
