"""A ``worktree`` session through ``serve`` and the official MCP client: the second call with the first call's
``session_id`` goes to the same warm child in the same worktree, which sees the first turn's edits; ``changes`` in
``structuredContent`` is the session's whole delta; ``changes_apply`` of the last turn applies it; ``session_close``
removes the worktree, the branch stays with the changes."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import mcp_types as types
import psutil
import pytest

from tests._provider_helpers import wait_for_file
from tests.server._helpers import SERVE_TIMEOUT_S, acp_entry, client_session, fake_agents, write_config
from tests.workspace._helpers import host_cli, make_repo, our_branches, user_state, wait_until_removed, worktree_paths

pytestmark = pytest.mark.anyio


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def test_the_official_client_continues_a_worktree_session(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    entry = {
        **acp_entry(MOCK_FS_OPS_FROM_PROMPT="1", MOCK_ECHO_CWD="1"),
        "cwd": str(repo),
        "workspace": "worktree",
    }
    config = write_config(tmp_path, {"agent": entry})
    before = user_state(repo)
    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with client_session(config, "--state-dir", str(state)) as session:
            server = next(p for p in psutil.Process().children() if "serve" in p.cmdline())
            task = json.dumps([["append", "notes.txt", "one\n"]])
            first = await session.call_tool("delegate_agent", {"task": task})
            assert first.structured_content is not None
            session_id = first.structured_content["session_id"]
            worktree = state / "worktrees" / session_id
            agents = [agent.pid for agent in fake_agents(server.pid)]
            task = json.dumps([["append", "notes.txt", "two\n"]])
            second = await session.call_tool("delegate_agent", {"task": task, "session_id": session_id})
            assert [agent.pid for agent in fake_agents(server.pid)] == agents  # the same warm child
            assert worktree_paths(repo) == [str(repo), str(worktree)]
            assert second.structured_content is not None
            applied = await session.call_tool("changes_apply", {"run_id": second.structured_content["run_id"]})
            closed = await session.call_tool("session_close", {"session_id": session_id})
            await wait_until_removed(worktree, repo)
    assert _text(first).startswith(f"{worktree}\n{worktree}")
    assert _text(second).startswith(f"{worktree}\n{worktree}")
    changes = second.structured_content["changes"]
    assert changes["branch"] == f"subagent-host/{session_id}"
    assert changes["files"] == [{"path": "notes.txt", "status": "added", "insertions": 2, "deletions": 0}]
    assert not applied.is_error and not closed.is_error
    assert (repo / "notes.txt").read_text() == "one\ntwo\n"
    assert worktree_paths(repo) == [str(repo)]
    assert our_branches(repo) == [f"subagent-host/{session_id}"]
    (repo / "notes.txt").unlink()
    assert user_state(repo) == before


async def test_sessions_close_leaves_a_worktree_a_running_serve_holds(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    state = tmp_path / "state"
    ready = tmp_path / "ready"
    # The second turn hangs in the child (its task names hold.txt) until it is cancelled: the session is busy, so
    # the serve holds its worktree whatever the machine's load (an idle one it would take cold within about 1 s of
    # the close, and remove the worktree itself).
    env = {"MOCK_FS_OPS_FROM_PROMPT": "1", "MOCK_HANG_ON": "hold.txt", "MOCK_READY_FILE": str(ready)}
    entry = {**acp_entry(**env), "cwd": str(repo), "workspace": "worktree"}
    config = write_config(tmp_path, {"agent": entry})
    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with client_session(config, "--state-dir", str(state)) as session:
            first = await session.call_tool("delegate_agent", {"task": json.dumps([["append", "n.txt", "one\n"]])})
            assert first.structured_content is not None
            session_id = first.structured_content["session_id"]
            worktree = state / "worktrees" / session_id
            assert worktree_paths(repo) == [str(repo), str(worktree)]  # its warm child works there
            ready.unlink()
            held = {"task": json.dumps([["append", "hold.txt", "two\n"]]), "session_id": session_id}
            async with anyio.create_task_group() as group:
                group.start_soon(session.call_tool, "delegate_agent", held)
                await wait_for_file(ready)  # the second turn runs: the session is busy
                closed = await host_cli("sessions", "close", session_id, "--state-dir", str(state), cwd=tmp_path)
                assert worktree_paths(repo) == [str(repo), str(worktree)]  # a busy session's worktree stays
                assert closed.returncode == 0, closed.stderr
                assert closed.stderr.decode() == (
                    f"subagent-host: the worktree of session {session_id} is in use by a running host, which removes "
                    "it when it closes\n"
                )
                group.cancel_scope.cancel()
    assert worktree_paths(repo) == [str(repo)]  # serve closed: removed, the branch kept with the changes
    assert our_branches(repo) == [f"subagent-host/{session_id}"]
