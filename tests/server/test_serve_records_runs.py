"""``serve`` records every run under the state directory by default (``--state-dir``), and ``--no-record`` writes
nothing; the transcript of a finished foreground call is complete once the server has shut down."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.records._helpers import read_jsonl
from tests.server._helpers import SERVE_TIMEOUT_S, acp_entry, client_session, write_config

pytestmark = pytest.mark.anyio


async def _one_foreground_call(config: Path, *extra: str) -> None:
    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with client_session(config, *extra) as session:
            result = await session.call_tool("delegate_echo", {"task": "record me"})
            assert result.is_error is not True


async def test_serve_records_a_foreground_call_under_the_state_dir(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"echo": acp_entry()})
    state = tmp_path / "state"
    await _one_foreground_call(config, "--state-dir", str(state))
    (transcript,) = sorted((state / "runs").glob("*.jsonl"))
    types = [record["type"] for record in read_jsonl(transcript)]
    assert types[0] == "run/start" and types[-1] == "run/end", types
    assert "prompt" in types


async def test_serve_no_record_writes_no_transcript(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"echo": acp_entry()})
    state = tmp_path / "state"
    await _one_foreground_call(config, "--state-dir", str(state), "--no-record")
    assert not (state / "runs").exists() or list((state / "runs").glob("*.jsonl")) == []
