"""A refused turn still yields: a free session is taken without a scheduling point, so a caller that loops over
calls refused by the session (here ``session-expired`` after ``session_close``) must not starve the event loop (the
reaper, the child readers, the teardown ladder run on it)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from host import CancelController, Host
from tests.sessions._helpers import PROCESS_TIMEOUT_S, session_config

pytestmark = pytest.mark.anyio


async def test_calls_refused_by_a_closed_session_let_other_tasks_run(tmp_path: Path) -> None:
    signal = CancelController().signal
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(session_config(tmp_path), parent_cwd=str(tmp_path)) as host:
            first = await host.execute("delegate_acp", {"task": "open"}, signal=signal)
            session_id = first.to_json()["value"]["session_id"]
            closed = await host.execute("session_close", {"session_id": session_id}, signal=signal)
            assert not closed.is_error
            ticks = refused_ticks = 0

            async def count_ticks() -> None:
                nonlocal ticks
                while True:
                    ticks += 1
                    await anyio.lowlevel.checkpoint()

            async with anyio.create_task_group() as group:
                group.start_soon(count_ticks)
                await anyio.lowlevel.checkpoint()
                start = ticks
                for _ in range(50):
                    refused = await host.execute("delegate_acp", {"task": "t", "session_id": session_id}, signal=signal)
                    assert refused.is_error
                refused_ticks = ticks - start
                group.cancel_scope.cancel()
            assert refused_ticks >= 25
