"""A refused call still yields: a refusal is often made without a scheduling point (a free session is taken without
one, arguments are checked and an unknown session looked up synchronously), so a caller that loops over refused
calls must not starve the event loop (the reaper, the child readers, the teardown ladder run on it).
``Host.execute`` yields once after every failed call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from host import CancelController, Host
from tests.sessions._helpers import PROCESS_TIMEOUT_S, session_config

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("refusal", ["closed session", "unknown session", "invalid arguments"])
async def test_calls_refused_for_any_reason_let_other_tasks_run(tmp_path: Path, refusal: str) -> None:
    signal = CancelController().signal
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(session_config(tmp_path), parent_cwd=str(tmp_path)) as host:
            first = await host.execute("delegate_acp", {"task": "open"}, signal=signal)
            session_id = first.to_json()["value"]["session_id"]
            closed = await host.execute("session_close", {"session_id": session_id}, signal=signal)
            assert not closed.is_error
            arguments: dict[str, Any] = {
                "closed session": {"task": "t", "session_id": session_id},
                "unknown session": {"task": "t", "session_id": "A" * 32},
                "invalid arguments": {"task": 5},
            }[refusal]
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
                    refused = await host.execute("delegate_acp", arguments, signal=signal)
                    assert refused.is_error
                refused_ticks = ticks - start
                group.cancel_scope.cancel()
            assert refused_ticks >= 25
