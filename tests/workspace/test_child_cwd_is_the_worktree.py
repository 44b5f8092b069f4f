"""A worktree child starts in the worktree, in the same subdirectory as the parent's cwd: its process cwd, the ACP
``session/new`` cwd and the DSH SDK ``initialize`` cwd; and a ``shared`` entry's call can ask for a worktree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from host import CancelController, Host, ToolSuccess
from host.config._loader import parse_config
from tests.conftest import FAKE_ACP_AGENT, FAKE_DSH_RUNTIME, PYTHON
from tests.workspace._helpers import make_repo, our_branches, worktree_paths

pytestmark = pytest.mark.anyio


def _config(kind: str, env: dict[str, str], workspace: str) -> Any:
    script = FAKE_ACP_AGENT if kind == "acp" else FAKE_DSH_RUNTIME
    entry: dict[str, Any] = {
        "kind": kind,
        "command": PYTHON,
        "args": [str(script)],
        "env": env,
        "dispose_eof_grace_ms": 300,
        "dispose_grace_ms": 300,
        "workspace": workspace,
    }
    return parse_config({"providers": {"child": entry}})


async def _delegate(config: Any, cwd: Path, state: Path, arguments: dict[str, Any]) -> ToolSuccess:
    with anyio.fail_after(60):
        async with Host.open(config, parent_cwd=str(cwd), state_dir=state) as host:
            result = await host.execute("delegate_child", arguments, signal=CancelController().signal)
    assert isinstance(result, ToolSuccess), result
    return result


async def test_an_acp_child_starts_in_the_worktree_subdirectory(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    (repo / "sub").mkdir()
    (repo / "sub" / "file.txt").write_text("in sub\n")
    state = tmp_path / "state"
    result = await _delegate(
        _config("acp", {"MOCK_ECHO_CWD": "1"}, "shared"),
        repo / "sub",
        state,
        {"task": "where", "workspace": "worktree"},
    )
    text = result.content[0]["text"]
    process_cwd, session_cwd = text.split("\n")
    assert process_cwd == session_cwd
    assert Path(process_cwd).parent.parent == state / "worktrees"
    assert Path(process_cwd).name == "sub"
    assert worktree_paths(repo) == [str(repo)] and our_branches(repo) == []


async def test_a_dsh_sdk_child_starts_and_initializes_in_the_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    record = tmp_path / "init.jsonl"
    env = {"FAKE_ECHO_CWD": "1", "FAKE_RECORD_INIT": str(record)}
    result = await _delegate(_config("dsh-sdk", env, "worktree"), repo, state, {"task": "where"})
    cwd_line = next(line for line in result.content[0]["text"].split("\n") if line.startswith("cwd="))
    worktree = cwd_line.removeprefix("cwd=")
    assert Path(worktree).parent == state / "worktrees"
    init = json.loads(record.read_text().splitlines()[0])
    assert init.get("cwd", init.get("params", {}).get("cwd")) == worktree
    assert worktree_paths(repo) == [str(repo)]
