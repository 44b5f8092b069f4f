"""A workspace failure that reaches a tool result is a coded error (docs/behaviour.md#workspaces-failure-codes): the
registry reports ``info {name: "WorkspaceError", code: "WORKSPACE_<KIND>"}`` beside the host-built text, so a model
(and a batch's ``error_code``) can tell a refused worktree from any other failure without parsing the message."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, get_args

import anyio
import pytest

from host import CancelController, Host, ToolResult
from host._exceptions import CodedError, WorkspaceError, workspace_error_code
from host.config._loader import parse_config
from host.workspace import WorkspaceErrorKind
from tests.conftest import FAKE_ACP_AGENT, PYTHON
from tests.snapshots import assert_snapshot

pytestmark = pytest.mark.anyio

_TIMEOUT_S = 30


def test_every_workspace_failure_kind_has_its_own_code() -> None:
    kinds = get_args(WorkspaceErrorKind)
    codes = {kind: WorkspaceError("message", kind).code for kind in kinds}
    assert len(set(codes.values())) == len(kinds)
    assert all(re.fullmatch(r"WORKSPACE_[A-Z]+(_[A-Z]+)*", code) for code in codes.values())
    assert codes["not-a-repository"] == workspace_error_code("not-a-repository") == "WORKSPACE_NOT_A_REPOSITORY"
    assert isinstance(WorkspaceError("message", "git-missing"), CodedError)


def _config(cwd: Path) -> Any:
    entry = {"kind": "acp", "command": PYTHON, "args": [str(FAKE_ACP_AGENT)], "cwd": str(cwd), "workspace": "worktree"}
    return parse_config({"providers": {"child": entry}})


def _scrubbed(result: ToolResult, path: Path) -> Any:
    return json.loads(json.dumps(result.to_json()).replace(str(path), "<path>"))


async def test_a_worktree_delegation_outside_a_repository_fails_with_its_code(tmp_path: Path) -> None:
    outside = tmp_path / "not-a-repo"
    outside.mkdir()
    with anyio.fail_after(_TIMEOUT_S):
        async with Host.open(_config(outside), parent_cwd=str(tmp_path), state_dir=tmp_path / "state") as host:
            result = await host.execute("delegate_child", {"task": "go"}, signal=CancelController().signal)
    data = result.to_json()
    assert data["error"]["info"] == {"name": "WorkspaceError", "code": "WORKSPACE_NOT_A_REPOSITORY"}
    assert_snapshot("tools", "workspace_not_a_repository", _scrubbed(result, outside))


async def test_changes_apply_of_a_run_without_changes_fails_with_its_code(tmp_path: Path) -> None:
    run_id = "5b0a1c3e-0d7e-4f5a-9c1b-2a3b4c5d6e7f"
    with anyio.fail_after(_TIMEOUT_S):
        async with Host.open(_config(tmp_path), parent_cwd=str(tmp_path), state_dir=tmp_path / "state") as host:
            result = await host.execute("changes_apply", {"run_id": run_id}, signal=CancelController().signal)
    data = result.to_json()
    assert data["error"]["info"] == {"name": "WorkspaceError", "code": "WORKSPACE_NO_CHANGES_RECORDED"}
    assert_snapshot("tools", "workspace_no_changes_recorded", data)
