"""``changes_apply`` through ``serve`` takes a run id, never a path: a ``run_id`` that climbs out of
``<state>/runs`` (``../elsewhere/x``) names no run, even where a valid patch and changes file wait at that path, and
nothing is written to the working tree."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import mcp.types as types
import pytest

from tests.server._helpers import SERVE_TIMEOUT_S, client_session
from tests.workspace._helpers import fs_ops, make_repo, worktree_config

pytestmark = pytest.mark.anyio


async def test_a_run_id_with_a_path_names_no_run(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    config = worktree_config(tmp_path, repo, {"one": {"MOCK_FS_OPS": fs_ops(["write", "a.txt", "changed\n"])}})
    state = tmp_path / "state"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with anyio.fail_after(SERVE_TIMEOUT_S * 2):
        async with client_session(config, "--state-dir", str(state)) as session:
            first = await session.call_tool("delegate_one", {"task": "edit"})
            assert first.structured_content is not None
            run_id = first.structured_content["run_id"]
            for suffix in (".patch", ".changes.json"):
                os.rename(state / "runs" / f"{run_id}{suffix}", elsewhere / f"x{suffix}")
            climbed = await session.call_tool("changes_apply", {"run_id": "../../elsewhere/x"})
    assert climbed.is_error is True
    text = [block.text for block in climbed.content if isinstance(block, types.TextContent)]
    assert text == ["Error: run ../../elsewhere/x kept no changes to apply"]
    assert (repo / "a.txt").read_text() == "one\ntwo\nthree\n"
