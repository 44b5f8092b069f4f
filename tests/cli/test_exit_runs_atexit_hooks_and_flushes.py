"""The console script's exit skips module teardown but loses nothing: ``atexit`` hooks run and what they leave in
stdout's buffer is written, with the command's own exit status (docs/design.md, the console entry)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli._script import run_script, script_env
from tests.conftest import REPO_ROOT

_PROBE_DIR = REPO_ROOT / "tests" / "cli" / "children" / "exit_probe"


def test_a_run_s_exit_runs_atexit_hooks_and_flushes_what_they_write(tmp_path: Path) -> None:
    mark = tmp_path / "mark"
    env = script_env(tmp_path, EXIT_PROBE_MARK=str(mark))
    env["PYTHONPATH"] = f"{_PROBE_DIR}:{env['PYTHONPATH']}"
    env.pop("PYTHONUNBUFFERED", None)  # stdout to a pipe is block-buffered: the hook's text waits in the buffer
    done = run_script("run", "--json", "--no-record", "hello", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    first, rest = done.stdout.decode().split("\n", 1)
    assert json.loads(first)["output"] == [{"type": "text", "text": "hello"}]
    assert rest == "written by an atexit hook, no newline"
    assert mark.read_text(encoding="utf-8") == "atexit ran"
