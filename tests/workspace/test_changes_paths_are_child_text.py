"""File paths in ``changes`` are child text: the summary line and every diagnostic hold only host facts, and the
command line shows a path with terminal controls neutralised (``runs show``, ``runs apply``'s conflicts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.workspace._helpers import fs_ops, host_cli, make_repo, worktree_config

pytestmark = pytest.mark.anyio

_EVIL = "evil\x1b]0;pwned\x07\x1b[31m.txt"


async def test_a_childs_file_name_never_reaches_the_summary_line_and_is_neutralised_on_the_terminal(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / _EVIL).write_text("the parent's own version\n")  # untracked in the parent: the apply will conflict
    ops = fs_ops(["write", _EVIL, "the child's version\n"])
    config = worktree_config(tmp_path, repo, {"child": {"MOCK_FS_OPS": ops, "MOCK_TEXT": "ok"}})
    state = tmp_path / "state"
    done = await host_cli("run", "--config", str(config), "--state-dir", str(state), "--json", "go", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["changes"]["files"][0]["path"] == _EVIL  # structured: the child's text as it is
    line = result["output"][-1]["text"]
    assert "evil" not in line and "\x1b" not in line

    (repo / _EVIL).write_text("the parent changed it meanwhile\n")
    applied = await host_cli("runs", "apply", result["run_id"], "--state-dir", str(state), cwd=tmp_path)
    assert applied.returncode == 1
    assert b"\x1b" not in applied.stderr and b"\x07" not in applied.stderr
    assert "evil\\x1b]0;pwned\\x07\\x1b[31m.txt" in applied.stderr.decode()
    assert (repo / _EVIL).read_text() == "the parent changed it meanwhile\n"

    shown = await host_cli("runs", "show", result["run_id"], "--state-dir", str(state), cwd=tmp_path)
    assert shown.returncode == 0
    assert b"\x1b" not in shown.stdout and b"\x07" not in shown.stdout
    assert "changes: 1 file(s), +1 -1 on subagent-host/" in shown.stdout.decode()
