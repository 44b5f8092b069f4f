"""``runs show --follow`` of a finished run whose child sent one update of several MiB (more than one read of the
transcript takes): the follow reads the whole long line and every record after it, and ends at ``run/end`` with the
run's own stop reason, never ``incomplete``."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli._helpers import acp_entry, write_config
from tests.cli._script import run_script, script_env


def test_follow_of_a_run_with_a_huge_record_reaches_run_end(tmp_path: Path) -> None:
    state = tmp_path / "state"
    env = script_env(tmp_path)
    config = write_config(tmp_path, {"fake": acp_entry(MOCK_HUGE_CHUNK_MIB="3")})
    done = run_script(
        "run", "--config", str(config), "--state-dir", str(state), "--json", "huge", cwd=tmp_path, env=env
    )
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    follow = run_script("runs", "show", "--follow", run_id, "--state-dir", str(state), cwd=tmp_path, env=env)
    assert follow.returncode == 0, follow.stderr
    assert follow.stderr == b""
    text = follow.stdout.decode()
    assert "x" * (3 * 1048576) in text
    assert "\nstop reason: completed\n" in text
    assert "incomplete" not in text
