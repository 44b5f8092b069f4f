"""A session file that is not what the host wrote (a FIFO, a symlink to ``/dev/zero``, an over-large file) reads as
no session, at once (docs/behaviour.md#records-files-and-modes): continuing it (``Host`` or ``serve``) is ``unknown
session`` as for a missing file, and ``sessions list|show`` answer without it. A FIFO used to block the event loop
in ``open()`` (hanging the whole host); ``/dev/zero`` used to be read without bound."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import anyio
import mcp_types as types
import pytest

from host import CancelController, Host, ToolResult
from host.sessions import read_session_file
from host.sessions._store import SessionRecord, new_session_id, write_session_file
from tests._state_file_helpers import fifo_at, memory_bounded, sparse_file, symlink_to_dev_zero
from tests.cli._helpers import CONSOLE_SCRIPT, cli_env
from tests.server._helpers import SERVE_TIMEOUT_S, client_session, write_config
from tests.sessions._helpers import session_config, session_entry

PROMPT_S = 10.0
"""How long an answer may take (a blocked reader is released only after ``RELEASE_S``, so the test fails)."""
RELEASE_S = 20.0
CLI_PROMPT_S = 20.0
"""Each console script's bound: its cold start on a loaded box, and no FIFO wait."""


def _text(result: ToolResult) -> str:
    return result.to_json()["content"][0]["text"]


def _saved_session(state: Path) -> str:
    stamp = "2026-12-05T05:00:00.000Z"
    record = SessionRecord(
        session_id=new_session_id(), provider="acp", kind="acp", created=stamp, last_used=stamp, state="cold"
    )
    write_session_file(state, record)
    return record.session_id


@pytest.mark.anyio
async def test_continuing_a_session_whose_file_is_a_fifo_is_an_unknown_session_at_once(tmp_path: Path) -> None:
    state = tmp_path / "state"
    session_id = new_session_id()
    signal = CancelController().signal
    with fifo_at(state / "sessions" / f"{session_id}.json", release_after_s=RELEASE_S):
        started = time.monotonic()
        with anyio.fail_after(PROMPT_S):
            async with Host.open(session_config(tmp_path), parent_cwd=str(tmp_path), state_dir=state) as host:
                result = await host.execute("delegate_acp", {"task": "x", "session_id": session_id}, signal=signal)
        elapsed = time.monotonic() - started  # a blocked event loop cannot meet fail_after's deadline: measured too
    assert elapsed < PROMPT_S
    assert _text(result) == f"Error: unknown session {session_id}"


def test_a_symlink_or_an_over_large_file_reads_as_no_session(tmp_path: Path) -> None:
    state = tmp_path / "state"
    kept = _saved_session(state)
    (state / "sessions" / f"{kept}.json").rename(state / "sessions" / "elsewhere")
    (state / "sessions" / f"{kept}.json").symlink_to(state / "sessions" / "elsewhere")  # the host writes none
    large = _saved_session(state)
    path = state / "sessions" / f"{large}.json"
    record = json.loads(path.read_bytes())
    path.write_text(json.dumps({**record, "runs": ["r" * 36] * 450_000}))  # ~17 MiB: past the 16 MiB bound
    fits = _saved_session(state)
    path = state / "sessions" / f"{fits}.json"
    path.write_text(json.dumps({**json.loads(path.read_bytes()), "runs": ["r" * 36] * 1000}))
    assert read_session_file(state, kept) is None
    assert read_session_file(state, large) is None
    loaded = read_session_file(state, fits)
    assert loaded is not None and len(loaded.runs) == 1000


def test_sessions_list_and_show_answer_at_once_past_a_fifo_dev_zero_and_a_huge_file(tmp_path: Path) -> None:
    state = tmp_path / "state"
    kept = _saved_session(state)
    fifo_id, zero_id, huge_id = new_session_id(), new_session_id(), new_session_id()
    symlink_to_dev_zero(state / "sessions" / f"{zero_id}.json")
    sparse_file(state / "sessions" / f"{huge_id}.json", b"{")  # 8 GiB, nothing on disk
    with fifo_at(state / "sessions" / f"{fifo_id}.json", release_after_s=CLI_PROMPT_S + 10):
        listed, shown_fifo, shown_zero, shown_huge = (
            subprocess.run(
                memory_bounded(CONSOLE_SCRIPT, "sessions", *args, "--state-dir", str(state)),
                capture_output=True,
                env=cli_env(),
                timeout=CLI_PROMPT_S,
                check=False,
            )
            for args in (("list", "--json"), ("show", fifo_id), ("show", zero_id), ("show", huge_id))
        )
    assert listed.returncode == 0, listed.stderr
    assert [session["session_id"] for session in json.loads(listed.stdout)["sessions"]] == [kept]
    for session_id, shown in ((fifo_id, shown_fifo), (zero_id, shown_zero), (huge_id, shown_huge)):
        assert shown.returncode == 1, shown.stderr
        assert shown.stderr.decode().splitlines()[-1] == f'subagent-host: no session "{session_id}"'


@pytest.mark.anyio
async def test_serve_answers_a_session_whose_file_is_a_fifo_and_keeps_serving(tmp_path: Path) -> None:
    state = tmp_path / "state"
    session_id = new_session_id()
    config = write_config(tmp_path, {"agent": session_entry(tmp_path)})
    with fifo_at(state / "sessions" / f"{session_id}.json", release_after_s=SERVE_TIMEOUT_S):
        with anyio.fail_after(SERVE_TIMEOUT_S):
            async with client_session(config, "--state-dir", str(state)) as session:
                with anyio.fail_after(PROMPT_S):  # the server's event loop used to block in open() on the FIFO
                    continued = await session.call_tool("delegate_agent", {"task": "x", "session_id": session_id})
                    listed = await session.call_tool("session_list", {})
    assert continued.is_error
    (block,) = continued.content
    assert isinstance(block, types.TextContent) and block.text == f"Error: unknown session {session_id}"
    assert not listed.is_error
