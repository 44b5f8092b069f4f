"""``serve`` through the official client: a worktree delegation's ``structuredContent`` carries ``changes`` and its
text ends with the host-built line; ``changes_apply`` (annotated destructive) applies them, all or nothing."""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp.types as types
import pytest

from tests.server._helpers import SERVE_TIMEOUT_S, client_session
from tests.workspace._helpers import fs_ops, make_repo, user_state, worktree_config

pytestmark = pytest.mark.anyio


async def test_serve_returns_changes_and_applies_them_with_changes_apply(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    config = worktree_config(
        tmp_path,
        repo,
        {
            "one": {"MOCK_FS_OPS": fs_ops(["write", "a.txt", "one\nby one\nthree\n"]), "MOCK_TEXT": "edited"},
            "two": {"MOCK_FS_OPS": fs_ops(["write", "a.txt", "one\nby two\nthree\n"])},
        },
    )
    state = tmp_path / "state"
    before = user_state(repo)
    with anyio.fail_after(SERVE_TIMEOUT_S * 2):
        async with client_session(config, "--state-dir", str(state)) as session:
            listed = await session.list_tools()
            first = await session.call_tool("delegate_one", {"task": "edit"})
            second = await session.call_tool("delegate_two", {"task": "edit", "workspace": "worktree"})
            assert (repo / "a.txt").read_text() == "one\ntwo\nthree\n"
            assert first.structured_content is not None and second.structured_content is not None
            applied = await session.call_tool("changes_apply", {"run_id": first.structured_content["run_id"]})
            conflict = await session.call_tool("changes_apply", {"run_id": second.structured_content["run_id"]})
    tool = next(tool for tool in listed.tools if tool.name == "changes_apply")
    assert tool.annotations is not None and tool.annotations.destructive_hint is True
    changes = first.structured_content["changes"]
    assert changes["files"] == [{"path": "a.txt", "status": "modified", "insertions": 1, "deletions": 1}]
    texts = [block.text for block in first.content if isinstance(block, types.TextContent)]
    assert texts == [f"edited\n[changes: 1 file, +1 -1 on branch {changes['branch']}; apply with changes_apply]"]
    assert applied.is_error is not True
    assert applied.structured_content is None or applied.structured_content.get("applied") in (True, None)
    assert (repo / "a.txt").read_text() == "one\nby one\nthree\n"
    assert conflict.is_error is not True
    conflict_text = [block.text for block in conflict.content if isinstance(block, types.TextContent)]
    assert conflict_text[0].endswith("nothing was applied. Conflicting paths:\n- a.txt")
    assert (repo / "a.txt").read_text() == "one\nby one\nthree\n"
    assert user_state(repo) == before
