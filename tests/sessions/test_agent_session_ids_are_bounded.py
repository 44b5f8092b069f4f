"""An agent's own session id is kept by a session (its file stores it, every later turn sends it back), so a kept
session takes one of at most 1024 UTF-8 bytes; a longer one fails the turn's start as ``new-session; protocol``
(the raw cause host-only), with no child left. A one-shot run without a session is not bounded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from host import CancelController, Host
from host.acp_provider._session import MAX_AGENT_SESSION_ID_BYTES
from tests.sessions._helpers import PROCESS_TIMEOUT_S, live_agents, session_config, session_entry

pytestmark = pytest.mark.anyio


def _entry(tmp_path: Path, agent_session_id: str) -> dict[str, Any]:
    entry = session_entry(tmp_path, MOCK_SESSION_ID=agent_session_id)
    del entry["env"]["MOCK_SESSION_DIR"]  # the fake would name a file after the id (over NAME_MAX)
    return entry


async def test_an_agent_session_id_over_the_bound_fails_the_start_and_one_at_it_is_kept(tmp_path: Path) -> None:
    longest = "é" * (MAX_AGENT_SESSION_ID_BYTES // 2)  # two bytes each in UTF-8
    config = session_config(tmp_path, longest=_entry(tmp_path, longest), over=_entry(tmp_path, longest + "x"))
    signal = CancelController().signal
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, state_dir=tmp_path / "state") as host:
            first = (await host.execute("delegate_longest", {"task": "one"}, signal=signal)).to_json()
            arguments = {"task": "two", "session_id": first["value"]["session_id"]}
            second = (await host.execute("delegate_longest", arguments, signal=signal)).to_json()
            refused = (await host.execute("delegate_over", {"task": "one"}, signal=signal)).to_json()
            assert len(live_agents()) == 1  # the kept session's child; the refused start left none
    assert first["is_error"] is False and second["is_error"] is False
    assert refused["is_error"] is True
    assert refused["error"]["message"] == (
        "subagent-acp: Subagent failure (provider: ACP; stage: new-session; category: protocol)"
    )
