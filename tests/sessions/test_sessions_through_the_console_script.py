"""Sessions through the console script (docs/behaviour.md#sessions-command-line): a second process continues a
persisted session with ``run --session`` (cold, through ``session/resume``) or ``run --continue``; ``sessions
list|show|close``; a closed session ends ``session-expired`` with the hint; ``--if-lost new`` resets the context."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from host.cli._hints import SESSION_EXPIRED_HINT
from host.sessions import is_session_id
from tests.cli._helpers import cli_env, write_config
from tests.conftest import PYTHON
from tests.sessions._helpers import session_entry

pytestmark = pytest.mark.anyio

CLI_TIMEOUT_S = 60


async def _cli(*args: str, cwd: Path) -> tuple[int, str, str]:
    done = await anyio.run_process([PYTHON, "-m", "host", *args], cwd=cwd, env=cli_env(), check=False)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def _answer(stdout: str) -> dict[str, Any]:
    data = json.loads(stdout)
    assert isinstance(data, dict)
    return cast("dict[str, Any]", data)


async def test_a_second_process_continues_a_persisted_session(tmp_path: Path) -> None:
    config = str(write_config(tmp_path, {"agent": session_entry(tmp_path, MOCK_SESSION_RESUME="1")}))
    state = str(tmp_path / "state")
    common = ("--config", config, "--state-dir", state, "--json")
    with anyio.fail_after(CLI_TIMEOUT_S):
        first = await _cli("run", *common, "find the flaky test", cwd=tmp_path)
        session_id = _answer(first[1])["session_id"]
        second = await _cli("run", *common, "--session", session_id, "now fix it", cwd=tmp_path)
        third = await _cli("run", *common, "--continue", "add a regression test", cwd=tmp_path)
        listed = await _cli("sessions", "list", "--json", "--state-dir", state, cwd=tmp_path)
        shown = await _cli("sessions", "show", session_id, "--state-dir", state, cwd=tmp_path)
    assert first[0] == second[0] == third[0] == 0, (first, second, third)
    assert is_session_id(session_id)
    assert _answer(second[1])["session_id"] == _answer(third[1])["session_id"] == session_id
    texts = [_answer(result[1])["output"][0]["text"] for result in (first, second, third)]
    assert texts[2].endswith("tasks=find the flaky test | now fix it | add a regression test")
    pids = {text.split()[0] for text in texts}
    assert len(pids) == 3  # every command is a new host: each turn resumed cold in a new child
    log = (tmp_path / "session.log").read_text().split()[::2]
    assert log == ["new", "prompt", "resume", "prompt", "resume", "prompt"]
    (summary,) = _answer(listed[1])["sessions"]
    assert summary["session_id"] == session_id and summary["turns"] == 3 and summary["state"] == "cold"
    assert shown[0] == 0 and shown[1].startswith(f"session {session_id}\nprovider: agent (acp)\nstate: cold\n")
    assert shown[1].count("--- turn ") == 3 and "\nprompt:\nnow fix it\n" in shown[1]
    path = tmp_path / "state" / "sessions" / f"{session_id}.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


async def test_a_closed_session_ends_session_expired_with_the_hint_and_if_lost_new_resets(tmp_path: Path) -> None:
    config = str(write_config(tmp_path, {"agent": session_entry(tmp_path)}))
    state = str(tmp_path / "state")
    common = ("--config", config, "--state-dir", state)
    with anyio.fail_after(CLI_TIMEOUT_S):
        first = await _cli("run", *common, "--json", "one", cwd=tmp_path)
        session_id = _answer(first[1])["session_id"]
        expired = await _cli("run", *common, "--json", "--session", session_id, "two", cwd=tmp_path)
        reset = await _cli("run", *common, "--session", session_id, "--if-lost", "new", "three", cwd=tmp_path)
        closed = await _cli("sessions", "close", session_id, "--state-dir", state, cwd=tmp_path)
        after_close = await _cli("run", *common, "--json", "--session", session_id, "four", cwd=tmp_path)
        unknown = await _cli("sessions", "show", "no-such-id", "--state-dir", state, cwd=tmp_path)
        nothing = await _cli(
            "run", "--config", config, "--state-dir", str(tmp_path / "empty"), "--continue", "x", cwd=tmp_path
        )
    # The fake advertises neither resume nor load: a new process cannot continue the session.
    line = "subagent-acp: Subagent failure (provider: ACP; stage: resume; category: session-expired)"
    assert expired[0] == 1
    expired_answer = _answer(expired[1])
    # A start that failed once the run had its id is a recorded run: its run id and closed cause.
    assert len(expired_answer.pop("run_id")) == 36
    assert expired_answer == {
        "schema": 1,
        "provider": "agent",
        "error": line,
        "cause": "failed",
        "session_id": session_id,
        "hints": [SESSION_EXPIRED_HINT],
    }
    assert f"hint: {SESSION_EXPIRED_HINT}\n" in expired[2]
    assert reset[0] == 0 and reset[1].endswith("tasks=three\n")
    assert "context reset" in reset[2]
    assert closed == (0, f"closed session {session_id}\n", "")
    assert after_close[0] == 1 and _answer(after_close[1])["error"] == line
    assert unknown[0] == 1 and unknown[2] == 'subagent-host: no session "no-such-id"\n'
    assert nothing[0] == 2 and "no session of provider agent in " in nothing[2]


def test_no_session_id_starts_with_a_dash_so_the_command_line_takes_it() -> None:
    from host.sessions._store import new_session_id

    ids = [new_session_id() for _ in range(2000)]  # about 31 would start with "-" if nothing prevented it
    assert not any(session_id.startswith("-") for session_id in ids)
    assert all(is_session_id(session_id) for session_id in ids)
