"""A new session whose first turn is aborted before it began (its call's signal fired while it waited) opened
nothing: the table forgets it, so aborted calls cannot pile up sessions in memory; a session with turns stays."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from host import CancelController
from host._exceptions import StartAbortedError
from host.sessions import SessionTable
from host.workspace import Workspaces

pytestmark = pytest.mark.anyio


async def test_an_aborted_first_turn_leaves_no_session(tmp_path: Path) -> None:
    controller = CancelController()
    controller.cancel("the caller gave up")
    async with anyio.create_task_group() as group:
        table = SessionTable(
            state_dir=None, max_warm=4, ttl_days=7, task_group=group, workspaces=Workspaces(tmp_path / "state")
        )
        session, _fork_of = table.resolve(
            provider="p", kind="acp", idle_ms=0, session_id=None, fork_session_id=None, cwd=None, label=None
        )
        assert [record.session_id for record in await table.records()] == [session.id]
        with pytest.raises(StartAbortedError):
            await table.begin_turn(session, signal=controller.signal, idle_ms=0, fork_of=None, if_lost_new=False)
        assert await table.records() == []
        group.cancel_scope.cancel()
