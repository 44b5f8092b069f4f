"""Fork refusals (docs/behaviour.md#sessions-cold-resume): ``fork_session_id`` of a session whose agent does not offer
``session/fork`` is the clear tool error ``SessionForkError`` (``SESSION_FORK_UNSUPPORTED``). The session file
records what the agent advertised, so the refusal comes before any child is spawned; for a file without that record
(an older host's) the fork's own handshake learns it and the call fails with the same error, its run recorded whole
and no child or session left. A DSH SDK runtime never forks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from host import CancelController, Host, ToolResult
from host.config._loader import parse_config
from host.sessions import list_session_files
from tests.conftest import FAKE_DSH_RUNTIME, PYTHON
from tests.records._helpers import read_jsonl
from tests.server._helpers import SERVE_TIMEOUT_S, client_session, write_config
from tests.sessions._helpers import PROCESS_TIMEOUT_S, live_agents, session_config, session_entry, text_of
from tests.snapshots import assert_snapshot

pytestmark = pytest.mark.anyio


def _refusal(session_id: str, provider: str) -> str:
    return f'Error: cannot fork session {session_id}: the agent of provider "{provider}" does not support forking'


def _run_records(state: Path) -> list[list[dict[str, Any]]]:
    runs = state / "runs"
    return [read_jsonl(path) for path in sorted(runs.glob("*.jsonl"))] if runs.exists() else []


def _session_id(result: ToolResult) -> str:
    data = result.to_json()
    assert data["is_error"] is False, data
    return data["value"]["session_id"]


async def test_a_fork_of_a_session_whose_agent_cannot_fork_is_refused_before_any_spawn(tmp_path: Path) -> None:
    signal = CancelController().signal
    state = tmp_path / "state"
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(session_config(tmp_path), parent_cwd=str(tmp_path), state_dir=state) as host:
            source_id = _session_id(await host.execute("delegate_acp", {"task": "base"}, signal=signal))
            refused = await host.execute("delegate_acp", {"task": "b", "fork_session_id": source_id}, signal=signal)
            again = await host.execute("delegate_acp", {"task": "go on", "session_id": source_id}, signal=signal)
    assert text_of(refused) == _refusal(source_id, "acp")
    data = refused.to_json()
    assert data["error"]["info"] == {"name": "SessionForkError", "code": "SESSION_FORK_UNSUPPORTED"}
    scrubbed = json.loads(json.dumps(data).replace(source_id, "<session_id>"))
    assert_snapshot("tools", "session_fork_unsupported", scrubbed)
    # The source recorded what its agent advertised; the refused fork spawned nothing and left no run or session.
    assert json.loads((state / "sessions" / f"{source_id}.json").read_text())["capabilities"] == []
    assert len(_run_records(state)) == 2  # the source's two turns
    assert [record.session_id for record in list_session_files(state)] == [source_id]
    assert _session_id(again) == source_id


async def test_a_fork_of_an_older_file_is_refused_by_its_handshake_with_the_same_error(tmp_path: Path) -> None:
    signal = CancelController().signal
    state = tmp_path / "state"
    config = session_config(tmp_path, acp=session_entry(tmp_path, idle_ms=0))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            source_id = _session_id(await host.execute("delegate_acp", {"task": "base"}, signal=signal))
        path = state / "sessions" / f"{source_id}.json"
        older = json.loads(path.read_text())
        del older["capabilities"]  # as a host before the capability record wrote it
        path.write_text(json.dumps(older))
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            refused = await host.execute("delegate_acp", {"task": "b", "fork_session_id": source_id}, signal=signal)
            left = live_agents()
    assert text_of(refused) == _refusal(source_id, "acp")
    assert refused.to_json()["error"]["info"]["code"] == "SESSION_FORK_UNSUPPORTED"
    assert left == []
    assert [record.session_id for record in list_session_files(state)] == [source_id]
    # The spawned attempt is one whole record: run/start and its run/end, the closed facts of its failed start.
    runs = _run_records(state)
    assert len(runs) == 2
    (fork_run,) = [records for records in runs if records[0]["data"]["session_id"] != source_id]
    types_of_fork = [record["type"] for record in fork_run]
    assert types_of_fork[0] == "run/start" and types_of_fork[-1] == "run/end"
    end = fork_run[-1]["data"]
    assert end["stop_reason"] == "error" and "stage: new-session; category: protocol" in end["diagnostic"]


async def test_a_dsh_sdk_session_cannot_be_forked(tmp_path: Path) -> None:
    signal = CancelController().signal
    entry = {
        "kind": "dsh-sdk",
        "command": PYTHON,
        "args": [str(FAKE_DSH_RUNTIME)],
        "shutdown_timeout_ms": 100,
        "dispose_eof_grace_ms": 200,
        "dispose_grace_ms": 200,
        "env": {"FAKE_SESSION_ECHO": "1"},
    }
    config = parse_config({"providers": {"sdk": entry}})
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            first = await host.execute("delegate_sdk", {"task": "one"}, signal=signal)
            source_id = _session_id(first)
            refused = await host.execute("delegate_sdk", {"task": "two", "fork_session_id": source_id}, signal=signal)
            again = await host.execute("delegate_sdk", {"task": "three", "session_id": source_id}, signal=signal)
    assert text_of(refused) == _refusal(source_id, "sdk")
    assert refused.to_json()["error"]["info"]["code"] == "SESSION_FORK_UNSUPPORTED"
    pid = text_of(first).split()[0]
    assert text_of(again) == f"{pid} tasks=one | three"  # the source session is untouched


async def test_serve_refuses_the_fork_with_the_same_text_through_the_official_client(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"agent": session_entry(tmp_path)})
    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with client_session(config, "--state-dir", str(tmp_path / "state")) as session:
            first = await session.call_tool("delegate_agent", {"task": "base"})
            assert first.structured_content is not None
            source_id = first.structured_content["session_id"]
            refused = await session.call_tool("delegate_agent", {"task": "b", "fork_session_id": source_id})
    assert refused.is_error is True
    (block,) = refused.content
    assert isinstance(block, types.TextContent)
    assert block.text == _refusal(source_id, "agent")


async def test_a_background_fork_is_refused_at_once_or_fails_its_job_with_the_same_text(tmp_path: Path) -> None:
    signal = CancelController().signal
    state = tmp_path / "state"
    config = session_config(tmp_path, acp=session_entry(tmp_path, idle_ms=0))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            source_id = _session_id(await host.execute("delegate_acp", {"task": "base"}, signal=signal))
            arguments = {"task": "b", "fork_session_id": source_id, "run_in_background": True}
            known = await host.execute("delegate_acp", arguments, signal=signal)
        path = state / "sessions" / f"{source_id}.json"
        older = json.loads(path.read_text())
        del older["capabilities"]
        path.write_text(json.dumps(older))
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            started = await host.execute("delegate_acp", arguments, signal=signal)
            outcome = await host.wait_job(started.to_json()["value"]["job_id"])
            left = live_agents()
    assert text_of(known) == _refusal(source_id, "acp")  # known before any job starts
    assert outcome.status == "failed"
    assert outcome.detail == "SessionForkError: " + _refusal(source_id, "acp").removeprefix("Error: ")
    assert left == []
