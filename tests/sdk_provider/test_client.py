"""SDK client conformance against real fake-runtime processes (docs/behaviour.md#sdk-acceptance group F)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import TaskGroup

from host._exceptions import (
    JsonRpcResponseError,
    RequestTimeoutError,
    SdkProtocolError,
    TransportClosedError,
)
from host.config import SdkEntryConfig
from host.config._loader import parse_config
from host.sdk_provider._provider import spec_of_entry
from host.sdk_provider.client import SdkClient, SdkRunSpec, SessionNotification, SessionRunOutcome
from tests.conftest import FAKE_DSH_RUNTIME, PYTHON
from tests.sdk_provider._helpers import (
    PROCESS_TIMEOUT_S,
    json_lines,
    pid_alive,
    runtime_spec,
    task_group,
    text_blocks,
    wait_for_file,
)
from tests.sdk_provider._helpers import script_args as _script
from tests.sdk_provider._seams import PATCHED_FAKE_SOURCE as _PATCHED_FAKE

CHILDREN = Path(__file__).resolve().parent / "children"


@asynccontextmanager
async def client_scope(spec: SdkRunSpec) -> AsyncGenerator[tuple[SdkClient, TaskGroup], None]:
    """A client and the task group that owns its tasks; the client is closed on the way out."""
    async with anyio.create_task_group() as group:
        client = SdkClient(spec)
        try:
            yield client, group
        finally:
            await client.aclose()


@asynccontextmanager
async def started_client(spec: SdkRunSpec) -> AsyncGenerator[SdkClient, None]:
    async with client_scope(spec) as (client, group):
        await client.start(group)
        yield client


async def collect_run(spec: SdkRunSpec) -> tuple[list[SessionNotification], list[dict[str, Any]]]:
    """Every notification the run handed over, and its validated root events (the ``session.event`` ones)."""
    seen, _ = await run_outcome(spec)
    return seen, [notification.params["event"] for notification in seen if notification.method == "session.event"]


async def run_outcome(spec: SdkRunSpec) -> tuple[list[SessionNotification], SessionRunOutcome]:
    seen: list[SessionNotification] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with started_client(spec) as client:
            outcome = await client.run("session-root", text_blocks("go"), seen.append)
            assert client._subscriptions == {}
    return seen, outcome


@pytest.mark.anyio
async def test_notifications_before_the_receipt_are_skipped_and_the_run_stops_at_root_idle(tmp_path: Path) -> None:
    seen, _ = await collect_run(runtime_spec(tmp_path, FAKE_PRE_RECEIPT_NOISE="1"))
    first, last = seen[0], seen[-1]
    assert first.method == "session.event" and first.params["event"]["type"] == "agent/inbox/spliced"
    assert last.method == "session.status" and last.params["status"] == "idle"
    assert [n.params["status"] for n in seen if n.method == "session.status"] == ["running", "idle"]
    assert "noise" not in json.dumps([n.params for n in seen])


@pytest.mark.anyio
async def test_a_run_collects_the_root_event_types_in_order(tmp_path: Path) -> None:
    _, events = await collect_run(runtime_spec(tmp_path, FAKE_TEXT="x"))
    assert [e["type"] for e in events] == [
        "agent/inbox/spliced",
        "turn/start",
        "assistant/chunk",
        "assistant/message",
        "turn/end",
    ]


@pytest.mark.anyio
async def test_the_outcome_keeps_the_last_turn_end_of_the_run(tmp_path: Path) -> None:
    seen, outcome = await run_outcome(runtime_spec(tmp_path, FAKE_TWO_TURNS="1"))
    turn_ends = [
        n.params["event"] for n in seen if n.method == "session.event" and n.params["event"]["type"] == "turn/end"
    ]
    assert len(turn_ends) == 2 and turn_ends[0]["data"]["reason"]["kind"] == "error"
    assert outcome.last_turn_end == turn_ends[-1]


@pytest.mark.anyio
async def test_root_events_exclude_a_nested_child_session(tmp_path: Path) -> None:
    seen, events = await collect_run(runtime_spec(tmp_path, FAKE_SUBAGENT="1"))
    assert "child says hi" not in json.dumps(events)
    assert all(n.params["sessionId"] == "session-root" for n in seen)


@pytest.mark.anyio
async def test_initialize_is_sent_once_with_the_configured_route(tmp_path: Path) -> None:
    record = tmp_path / "init.jsonl"
    spec = runtime_spec(tmp_path, max_tokens=99, FAKE_RECORD_INIT=str(record))
    spec = dataclasses.replace(spec, reasoning_effort="high")
    await collect_run(spec)
    assert json_lines(record) == [
        {
            "cwd": str(tmp_path),
            "provider": "fake-provider",
            "model": "fake-model",
            "reasoningEffort": "high",
            "maxTokens": 99,
        }
    ]


@pytest.mark.anyio
async def test_a_relative_config_cwd_runs_in_its_realpath_and_sends_the_absolute_path(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    record = tmp_path / "init.jsonl"
    table = {
        "kind": "dsh-sdk",
        "command": PYTHON,
        "args": [str(FAKE_DSH_RUNTIME)],
        "cwd": "link",
        "env": {"FAKE_RECORD_INIT": str(record), "FAKE_ECHO_CWD": "1"},
    }
    entry = parse_config({"providers": {"dsh-sdk": table}}, base_dir=str(tmp_path)).providers["dsh-sdk"]
    assert isinstance(entry, SdkEntryConfig) and entry.cwd is not None
    _, events = await collect_run(spec_of_entry(entry, entry.cwd))
    message = next(e for e in events if e["type"] == "assistant/message")
    assert message["data"]["message"]["content"][0]["text"].startswith(f"cwd={await anyio.Path(real).resolve()}\n")
    assert json_lines(record)[0] == {
        "cwd": str(tmp_path / "link"),
        "provider": "deepseek-official",
        "model": "deepseek-v4-flash",
    }


@pytest.mark.anyio
async def test_an_initialize_error_keeps_code_message_and_data(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with client_scope(runtime_spec(tmp_path, FAKE_INIT_ERROR="1")) as (client, group):
            with pytest.raises(JsonRpcResponseError) as caught:
                await client.start(group)
    assert (caught.value.code, caught.value.message, caught.value.data) == (
        7,
        "scripted init failure",
        {"hint": "fake"},
    )


@pytest.mark.anyio
async def test_an_initialize_result_without_identity_is_a_protocol_error(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with client_scope(runtime_spec(tmp_path, FAKE_MALFORMED="1")) as (client, group):
            with pytest.raises(SdkProtocolError) as caught:
                await client.start(group)
    assert str(caught.value) == "initialize returned no server identity: {}"


@pytest.mark.anyio
async def test_initialize_times_out_with_the_exact_message(tmp_path: Path) -> None:
    spec = dataclasses.replace(runtime_spec(tmp_path, FAKE_HANG_INIT="1"), initialize_timeout_ms=50)
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with client_scope(spec) as (client, group):
            with pytest.raises(RequestTimeoutError) as caught:
                await client.start(group)
    assert str(caught.value) == "initialize timed out after 50ms waiting for the DSH SDK runtime"


@pytest.mark.anyio
async def test_per_call_timeouts_name_the_stderr_tail_and_leave_nothing_pending(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with started_client(runtime_spec(tmp_path, FAKE_HANG_PROMPT="1", FAKE_STDERR="boom")) as client:
            messages: list[str] = []
            for _ in range(3):
                with pytest.raises(RequestTimeoutError) as caught:
                    params = {"sessionId": "session-root", "contentBlocks": text_blocks("go")}
                    await client.request("session/prompt", params, timeout_ms=200)
                messages.append(str(caught.value))
            assert client._peer is not None
            assert len(client._peer._pending) == 0
    assert messages[0] == "session/prompt timed out after 200ms waiting for the DSH SDK runtime; stderr tail:\nboom"


@pytest.mark.anyio
async def test_a_prompt_result_without_message_id_is_a_protocol_error(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with started_client(runtime_spec(tmp_path, FAKE_MALFORMED_PROMPT="1")) as client:
            with pytest.raises(SdkProtocolError) as caught:
                await client.run("session-root", text_blocks("go"))
            assert client._subscriptions == {}
    assert str(caught.value).startswith("session/prompt returned no message id: ")


@pytest.mark.anyio
async def test_runtime_death_is_a_transport_error_with_exit_code_and_stderr(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with client_scope(runtime_spec(tmp_path, FAKE_EXIT_BEFORE_INIT="1", FAKE_STDERR="dying")) as (c, g):
            with pytest.raises(TransportClosedError) as first:
                await c.start(g)
            with pytest.raises(TransportClosedError) as later:
                await c.request("session/prompt", {"sessionId": "s", "contentBlocks": []})
    for error in (first.value, later.value):
        assert "\nexit code: 3" in str(error)
        assert str(error).endswith("\nstderr tail:\ndying")
    assert str(later.value).startswith("DSH SDK runtime is not running")


@pytest.mark.anyio
async def test_an_unterminated_stderr_line_is_flushed_into_the_error(tmp_path: Path) -> None:
    spec = runtime_spec(tmp_path, FAKE_EXIT_BEFORE_INIT="1", FAKE_STDERR_NO_NEWLINE="last words")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with client_scope(spec) as (client, group):
            with pytest.raises(TransportClosedError) as caught:
                await client.start(group)
    assert str(caught.value).endswith("\nstderr tail:\nlast words")


@pytest.mark.anyio
async def test_a_nonexistent_command_fails_fast_to_start(tmp_path: Path) -> None:
    spec = runtime_spec(tmp_path, command=str(tmp_path / "no-such-runtime"), args=())
    with anyio.fail_after(5):
        async with client_scope(spec) as (client, group):
            with pytest.raises(TransportClosedError) as caught:
                await client.start(group)
    assert str(caught.value).startswith("DSH SDK runtime failed to start\nspawn error: ")
    assert isinstance(caught.value.__cause__, OSError)


@pytest.mark.anyio
async def test_aclose_is_idempotent_and_later_requests_say_the_client_is_closed(tmp_path: Path) -> None:
    with anyio.fail_after(5):
        await SdkClient(runtime_spec(tmp_path)).aclose()  # nothing spawned: a no-op
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with started_client(runtime_spec(tmp_path)) as client:
            pid = client.pid
            async with anyio.create_task_group() as both:
                both.start_soon(client.aclose)
                both.start_soon(client.aclose)
            await client.aclose()
            with pytest.raises(TransportClosedError) as caught:
                await client.request("session/prompt")
    assert str(caught.value) == "DSH SDK runtime client is closed"
    assert pid is not None and not pid_alive(pid)


@pytest.mark.anyio
@pytest.mark.parametrize(("trap", "grace_ms"), [(False, 1000.0), (True, 300.0)], ids=["sigterm", "sigkill"])
async def test_the_close_ladder_escalates_past_an_ignored_eof(tmp_path: Path, trap: bool, grace_ms: float) -> None:
    marker = tmp_path / "sigterm"
    env = {"FAKE_IGNORE_EOF": "1", "FAKE_SIGTERM_FILE": str(marker)}
    if trap:
        env["FAKE_TRAP_SIGTERM"] = "1"
    spec = dataclasses.replace(runtime_spec(tmp_path, env=env), dispose_eof_grace_ms=100, dispose_grace_ms=grace_ms)
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with started_client(spec) as client:
            pid = client.pid
            await client.aclose()
    assert marker.exists()
    assert pid is not None and not pid_alive(pid)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("env", "prefix"),
    [
        ({"FAKE_MALFORMED_EVENT": "1"}, "session.event carried no event envelope: 42"),
        ({"FAKE_MALFORMED_MESSAGE": "1"}, "assistant/message event carried malformed content: "),
        ({"FAKE_MESSAGE_WITHOUT_DATA": "1"}, "assistant/message event carried malformed content: "),
        ({"FAKE_MALFORMED_CHUNK": "1"}, "assistant/chunk event carried a malformed chunk: "),
        ({"FAKE_MALFORMED_REASON": "1"}, 'turn/end carried no reason envelope: "not-a-reason-envelope"'),
        ({"FAKE_MALFORMED_REASON": "no-data"}, "turn/end event carried malformed data: "),
        ({"FAKE_MALFORMED_REASON": "null-data"}, "turn/end event carried malformed data: "),
        ({"FAKE_MALFORMED_REASON": "aborted"}, 'turn/end carried a malformed aborted reason: {"kind":"aborted"}'),
        ({"FAKE_MALFORMED_REASON": "hook"}, "turn/end carried a malformed hook abort reason: "),
        ({"FAKE_MALFORMED_REASON": "abort-unknown"}, "turn/end carried an unknown abort reason: "),
    ],
)
async def test_malformed_root_events_fail_the_run(tmp_path: Path, env: dict[str, str], prefix: str) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with started_client(runtime_spec(tmp_path, env=env)) as client:
            with pytest.raises(SdkProtocolError) as caught:
                await client.run("session-root", text_blocks("go"))
    assert str(caught.value).startswith(prefix)


@pytest.mark.anyio
async def test_a_complete_hook_abort_is_accepted(tmp_path: Path) -> None:
    _, events = await collect_run(runtime_spec(tmp_path, FAKE_REASON_KIND="aborted", FAKE_ABORT_REASON_KIND="hook"))
    assert events[-1]["data"]["reason"] == {
        "kind": "aborted",
        "reason": {"kind": "hook", "reason": "scripted hook abort"},
    }


@pytest.mark.anyio
async def test_the_stderr_tail_keeps_only_the_newest_400_lines(tmp_path: Path) -> None:
    lines = "\n".join(f"line {i}" for i in range(500))
    spec = runtime_spec(tmp_path, FAKE_EXIT_BEFORE_INIT="1", FAKE_STDERR=lines)
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with client_scope(spec) as (client, group):
            with pytest.raises(TransportClosedError) as caught:
                await client.start(group)
            tail = client.stderr_tail
    assert tail == tuple(f"line {i}" for i in range(100, 500))
    assert str(caught.value).endswith("\nstderr tail:\n" + "\n".join(tail))


@pytest.mark.anyio
async def test_a_runtime_to_host_request_gets_method_not_found(tmp_path: Path) -> None:
    answer = tmp_path / "answer.json"
    spec = runtime_spec(
        tmp_path, args=[str(CHILDREN / "method_probe.py")], PROBE_METHOD="client/whatever", PROBE_FILE=str(answer)
    )
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with started_client(spec):
            text = await wait_for_file(answer)
    assert json.loads(text) == {
        "jsonrpc": "2.0",
        "id": "probe-1",
        "error": {"code": -32601, "message": "method not found: client/whatever"},
    }


@pytest.mark.anyio
async def test_request_ids_are_req_uuid_hex_strings(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with started_client(runtime_spec(tmp_path)) as client:
            assert client._peer is not None
            request_id = client._peer._next_id()
    assert isinstance(request_id, str) and request_id.startswith("req_") and len(request_id) == 36
    int(request_id[4:], 16)


@pytest.mark.anyio
async def test_a_failed_shutdown_request_is_noted_in_the_host_only_stderr_tail(tmp_path: Path) -> None:
    spec = runtime_spec(tmp_path, args=_script(tmp_path, "patched.py", _PATCHED_FAKE), AUDIT_IGNORE_SHUTDOWN="1")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            client = SdkClient(spec)
            try:
                await client.start(group)
            finally:
                await client.aclose()  # never raises for a failed shutdown: stdin EOF still ends the runtime
    assert client.stderr_tail == (
        "shutdown request failed: shutdown timed out after 100ms waiting for the DSH SDK runtime",
    )
    pid = client.pid
    assert pid is not None and not pid_alive(pid)


@pytest.mark.anyio
async def test_a_subscription_made_after_close_is_born_failed(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            client = SdkClient(runtime_spec(tmp_path))
            try:
                await client.start(group)
            finally:
                await client.aclose()
            subscription = client.subscribe("session-late")
            with pytest.raises(TransportClosedError) as caught:
                await subscription.receive()
            subscription.close()
    assert str(caught.value).startswith("DSH SDK runtime closed")
