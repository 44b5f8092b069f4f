"""The handle (docs/behaviour.md#sessions): every delegation carries a host-minted ``session_id``; a second call with
it reaches the same live child, which kept the context; unknown and foreign ids are clear tool errors; the run
record's ``run/start`` names the session and the turn; background jobs carry the session too; session files are
private and hold no environment values."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import anyio
import pytest

from host import CancelController, Host
from host.sessions import SESSION_ID_BYTES, is_session_id
from tests.records._helpers import read_jsonl
from tests.sessions._helpers import (
    PROCESS_TIMEOUT_S,
    echo_of,
    live_agents,
    session_config,
    session_entry,
    session_log,
    text_of,
    wait_until,
)
from tests.snapshots import assert_snapshot

pytestmark = pytest.mark.anyio


async def test_a_second_call_with_the_session_id_reaches_the_same_child_which_kept_the_context(
    tmp_path: Path,
) -> None:
    signal = CancelController().signal
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(session_config(tmp_path), parent_cwd=str(tmp_path)) as host:
            first = await host.execute("delegate_acp", {"task": "find the bug"}, signal=signal)
            session_id = first.to_json()["value"]["session_id"]
            second = await host.execute("delegate_acp", {"task": "now fix it", "session_id": session_id}, signal=signal)
            other = await host.execute("delegate_acp", {"task": "unrelated"}, signal=signal)
            warm = len(live_agents())
    first_pid, first_tasks = echo_of(first)
    second_pid, second_tasks = echo_of(second)
    other_pid, other_tasks = echo_of(other)
    assert is_session_id(session_id) and SESSION_ID_BYTES * 8 >= 128
    assert second.to_json()["value"]["session_id"] == session_id
    assert (first_pid, first_tasks) == (second_pid, ["find the bug"])
    assert second_tasks == ["find the bug", "now fix it"]
    assert other_tasks == ["unrelated"] and other_pid != first_pid
    assert other.to_json()["value"]["session_id"] != session_id
    assert warm == 2
    # One session/new per session; the second turn went straight to session/prompt on the live child.
    assert [line.split()[0] for line in session_log(tmp_path)] == ["new", "prompt", "prompt", "new", "prompt"]
    assert live_agents() == []


async def test_session_ids_are_distinct_192_bit_tokens(tmp_path: Path) -> None:
    signal = CancelController().signal
    ids: set[str] = set()
    config = session_config(tmp_path, acp=session_entry(tmp_path, idle_ms=0))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            for index in range(5):
                result = await host.execute("delegate_acp", {"task": f"t{index}"}, signal=signal)
                ids.add(result.to_json()["value"]["session_id"])
    assert len(ids) == 5
    assert all(is_session_id(session_id) and len(session_id) == 32 for session_id in ids)


async def test_an_unknown_id_and_another_providers_id_are_clear_tool_errors(tmp_path: Path) -> None:
    signal = CancelController().signal
    config = session_config(tmp_path, a=session_entry(tmp_path), b=session_entry(tmp_path))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            started = await host.execute("delegate_a", {"task": "x"}, signal=signal)
            session_id = started.to_json()["value"]["session_id"]
            unknown = await host.execute("delegate_a", {"task": "x", "session_id": "no-such-session"}, signal=signal)
            foreign = await host.execute("delegate_b", {"task": "x", "session_id": session_id}, signal=signal)
    assert text_of(unknown) == "Error: unknown session no-such-session"
    assert text_of(foreign) == f'Error: session {session_id} belongs to provider "a", not "b"'
    assert_snapshot("tools", "session_unknown", unknown.to_json())
    foreign_json = json.loads(json.dumps(foreign.to_json()).replace(session_id, "<session_id>"))
    assert_snapshot("tools", "session_other_provider", foreign_json)


async def test_run_start_records_the_session_and_the_turn_and_the_file_is_private(tmp_path: Path) -> None:
    signal = CancelController().signal
    state = tmp_path / "state"
    config = session_config(tmp_path, acp=session_entry(tmp_path, MOCK_MARKER_SECRET="s3cr3t-env-value"))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            first = await host.execute("delegate_acp", {"task": "one", "label": "review"}, signal=signal)
            session_id = first.to_json()["value"]["session_id"]
            second = await host.execute("delegate_acp", {"task": "two", "session_id": session_id}, signal=signal)
            listed = await host.execute("session_list", {}, signal=signal)
    starts: list[dict[str, Any]] = []
    for result in (first, second):
        records = read_jsonl(state / "runs" / f"{result.to_json()['value']['run_id']}.jsonl")
        starts.append(next(record["data"] for record in records if record["type"] == "run/start"))
    assert [(start["session_id"], start["turn"]) for start in starts] == [(session_id, 1), (session_id, 2)]
    path = state / "sessions" / f"{session_id}.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    saved = json.loads(path.read_text())
    assert saved["turns"] == 2 and saved["state"] == "cold" and saved["provider"] == "acp" and saved["kind"] == "acp"
    assert saved["runs"] == [result.to_json()["value"]["run_id"] for result in (first, second)]
    assert saved["label"] == "review" and saved["cwd"] == str(tmp_path)
    assert "s3cr3t-env-value" not in path.read_text()
    assert text_of(listed).startswith(f"{session_id} [acp] warm, 2 turns, last used ")
    assert text_of(listed).endswith(" — review")


async def test_a_background_job_carries_its_session_and_can_be_continued(tmp_path: Path) -> None:
    signal = CancelController().signal
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(session_config(tmp_path), parent_cwd=str(tmp_path)) as host:
            started = await host.execute("delegate_acp", {"task": "bg", "run_in_background": True}, signal=signal)
            value = started.to_json()["value"]
            outcome = await host.wait_job(value["job_id"])
            read = await host.execute("job_output", {"job_id": value["job_id"]}, signal=signal)
            follow = await host.execute(
                "delegate_acp", {"task": "fg", "session_id": value["session_id"]}, signal=signal
            )
    assert outcome.status == "completed" and outcome.session_id == value["session_id"]
    assert f"\n[session: {value['session_id']}]\n[status: completed]" in text_of(read)
    assert echo_of(follow)[1] == ["bg", "fg"]


async def test_fork_session_id_starts_a_new_session_with_the_sources_context(tmp_path: Path) -> None:
    signal = CancelController().signal
    config = session_config(
        tmp_path,
        fork=session_entry(tmp_path, MOCK_SESSION_FORK="1"),
        plain=session_entry(tmp_path),
    )
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            source = await host.execute("delegate_fork", {"task": "base"}, signal=signal)
            source_id = source.to_json()["value"]["session_id"]
            forked = await host.execute(
                "delegate_fork", {"task": "branch", "fork_session_id": source_id}, signal=signal
            )
            again = await host.execute("delegate_fork", {"task": "main line", "session_id": source_id}, signal=signal)
            plain = await host.execute("delegate_plain", {"task": "base"}, signal=signal)
            plain_id = plain.to_json()["value"]["session_id"]
            refused = await host.execute("delegate_plain", {"task": "b", "fork_session_id": plain_id}, signal=signal)
    assert forked.to_json()["value"]["session_id"] not in (None, source_id)
    assert echo_of(forked)[1] == ["base", "branch"]
    assert echo_of(again)[1] == ["base", "main line"]
    assert text_of(refused) == (
        f'Error: cannot fork session {plain_id}: the agent of provider "plain" does not support forking'
    )


async def test_a_session_unused_past_its_ttl_is_forgotten(tmp_path: Path) -> None:
    signal = CancelController().signal
    state = tmp_path / "state"
    config = session_config(tmp_path, acp=session_entry(tmp_path, idle_ms=0))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            first = await host.execute("delegate_acp", {"task": "one"}, signal=signal)
        session_id = first.to_json()["value"]["session_id"]
        path = state / "sessions" / f"{session_id}.json"
        saved = json.loads(path.read_text())
        path.write_text(json.dumps({**saved, "last_used": "2020-01-01T00:00:00.000Z"}))
        async with Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host:
            await wait_until(lambda: not path.exists())  # the reaper's first sweep removes the expired file
            later = await host.execute("delegate_acp", {"task": "two", "session_id": session_id}, signal=signal)
    assert not path.exists()
    assert text_of(later) == f"Error: unknown session {session_id}"
