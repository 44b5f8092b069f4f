"""The built-in echo resumes the sessions it minted, so ``run --session`` / ``--continue`` work on it out of the box;
an id it did not mint is refused, and the host then ends the call ``session-expired`` (never a silent fresh session)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

from tests.cli._script import run_script, script_env

EXPIRED = b"Subagent failure (provider: ACP; stage: resume; category: session-expired)"


def _json(stdout: bytes) -> dict[str, Any]:
    data = json.loads(stdout)
    assert isinstance(data, dict)
    return cast("dict[str, Any]", data)


def _env(tmp_path: Path) -> dict[str, str]:
    return script_env(tmp_path, SUBAGENT_HOST_STATE_DIR=str(tmp_path / "state"))


def test_a_second_process_continues_an_echo_session(tmp_path: Path) -> None:
    env = _env(tmp_path)
    first = _json(run_script("run", "--json", "one", cwd=tmp_path, env=env).stdout)
    session_id = first["session_id"]
    second = run_script("run", "--json", "--session", session_id, "two", cwd=tmp_path, env=env)
    assert second.returncode == 0, second.stderr
    assert _json(second.stdout)["session_id"] == session_id
    third = run_script("run", "--continue", "three", cwd=tmp_path, env=env)
    assert (third.returncode, third.stdout) == (0, b"three\n")
    listed = _json(run_script("sessions", "list", "--json", cwd=tmp_path, env=env).stdout)
    assert [(s["session_id"], s["turns"]) for s in listed["sessions"]] == [(session_id, 3)]


def test_an_id_the_echo_did_not_mint_is_not_resumed(tmp_path: Path) -> None:
    env = _env(tmp_path)
    session_id = _json(run_script("run", "--json", "one", cwd=tmp_path, env=env).stdout)["session_id"]
    path = tmp_path / "state" / "sessions" / f"{session_id}.json"
    record = json.loads(path.read_bytes())
    assert record["agent_session_id"].startswith("echo-")
    record["agent_session_id"] = "someone-else"
    path.write_text(json.dumps(record))
    done = run_script("run", "--session", session_id, "two", cwd=tmp_path, env=env)
    assert done.returncode != 0
    assert done.stdout == b""
    assert EXPIRED in done.stderr
