"""A forked session's file names the session it was forked from (``forked_from``), and ``subagent-host sessions
show`` says so (``forked from: <id>``; ``"forked_from"`` in ``--json``); a session that is not a fork has none."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from host import CancelController, Host
from host.sessions import read_session_file
from tests.sessions._helpers import PROCESS_TIMEOUT_S, session_config, session_entry
from tests.workspace._helpers import host_cli

pytestmark = pytest.mark.anyio


async def test_a_forks_file_and_sessions_show_name_its_source(tmp_path: Path) -> None:
    state = tmp_path / "state"
    config = session_config(tmp_path, acp=session_entry(tmp_path, MOCK_SESSION_FORK="1"))
    signal = CancelController().signal
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            source = await host.execute("delegate_acp", {"task": "start"}, signal=signal)
            source_id = source.to_json()["value"]["session_id"]
            forked = await host.execute("delegate_acp", {"task": "branch", "fork_session_id": source_id}, signal=signal)
            fork_id = forked.to_json()["value"]["session_id"]
        shown = await host_cli("sessions", "show", fork_id, "--state-dir", str(state), cwd=tmp_path)
        shown_json = await host_cli("sessions", "show", fork_id, "--json", "--state-dir", str(state), cwd=tmp_path)
        source_json = await host_cli("sessions", "show", source_id, "--json", "--state-dir", str(state), cwd=tmp_path)
    assert fork_id != source_id
    fork_record, source_record = read_session_file(state, fork_id), read_session_file(state, source_id)
    assert fork_record is not None and fork_record.forked_from == source_id
    assert source_record is not None and source_record.forked_from is None
    assert shown.returncode == 0, shown.stderr
    assert f"\nforked from: {source_id}\n" in shown.stdout.decode()
    assert json.loads(shown_json.stdout)["forked_from"] == source_id
    assert json.loads(source_json.stdout)["forked_from"] is None
