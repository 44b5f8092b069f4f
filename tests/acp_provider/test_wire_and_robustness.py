"""Wire conformance and robustness against real children (docs/behaviour.md#acp-acceptance and the issue's robustness
list)."""

from __future__ import annotations

import importlib.metadata
import json
import logging
import os
import signal
import sys
from collections.abc import Generator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from anyio.abc import TaskGroup

from host.acp_provider import AcpProvider
from host.acp_provider._run import start_acp_run
from host.cancel import CancelController
from host.process import ProcessHandle, run_teardown_ladder, spawn_managed
from host.stream import ChunkFrame, StreamFrame
from tests._provider_helpers import is_gone
from tests.acp_conformance import WireRecorder, validate_client_message
from tests.acp_provider._helpers import (
    PROCESS_TIMEOUT_S,
    agent_entry,
    agent_spec,
    assert_conformant,
    make_request,
    open_run,
    task_group,
    wait_for_file,
)
from tests.acp_provider._seams import decorated_spawn, tee_wire
from tests.conftest import FAKE_ACP_AGENT, PYTHON

CHILDREN = Path(__file__).resolve().parent / "children"
F = "Subagent failure (provider: ACP; "


def child(name: str, *args: str) -> list[str]:
    return [str(CHILDREN / name), *args]


@pytest.mark.anyio
async def test_initialize_carries_exactly_the_version_empty_capabilities_and_client_info(tmp_path: Path) -> None:
    record = tmp_path / "init"
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), agent_spec(tmp_path, MOCK_RECORD_INIT=str(record))) as run:
            await run.result()
    version = importlib.metadata.version("subagent-host")
    expected = {
        "protocolVersion": 1,
        "clientCapabilities": {},
        "clientInfo": {"name": "subagent-host", "version": version},
    }
    assert record.read_text().splitlines() == [json.dumps(expected, separators=(",", ":"))]


@pytest.mark.anyio
@pytest.mark.parametrize(
    "method", ["fs/read_text_file", "fs/write_text_file", "terminal/create", "_vendor/extension", "no/such_method"]
)
async def test_every_unsupported_agent_request_gets_method_not_found(tmp_path: Path, method: str) -> None:
    client, agent = WireRecorder(), WireRecorder()
    spawn = decorated_spawn(tee_wire(client, agent))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), agent_spec(tmp_path, MOCK_PROBE_REQUEST=method), spawn=spawn) as run:
            result = await run.result()
    assert result.to_json() == {
        "output": [{"type": "text", "text": f"probe {method}: -32601"}],
        "stop_reason": "completed",
    }
    [answer] = [m for m in client.messages if "method" not in m]
    assert answer["error"] == {"code": -32601, "message": "Method not found"}
    for message in client.messages:
        validate_client_message(message, allow_extensions=True)


@pytest.mark.anyio
async def test_unknown_updates_and_extension_notifications_are_consumed_silently(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    client, agent = WireRecorder(), WireRecorder()
    spec = agent_spec(tmp_path, MOCK_EXTRA_UPDATES="1", MOCK_TEXT="ok")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), spec, spawn=decorated_spawn(tee_wire(client, agent))) as run:
            result = await run.result()
    assert result.to_json() == {"output": [{"type": "text", "text": "ok"}], "stop_reason": "completed"}
    assert [r.getMessage() for r in caplog.records if r.levelno > logging.DEBUG] == []


@pytest.mark.anyio
# The agent writes the late chunk right behind the response, so both usually arrive in one read: repeating the
# scenario makes a reader that handles the next line before freezing fail reliably.
@pytest.mark.parametrize("attempt", range(8))
async def test_a_chunk_after_the_prompt_response_is_neither_folded_nor_delivered(tmp_path: Path, attempt: int) -> None:
    frames: list[StreamFrame] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(on_frame=frames.append), agent_spec(tmp_path, MOCK_LATE_TEXT="late")) as run:
            result = await run.result()
    assert result.output == [{"type": "text", "text": "mock child answer"}]
    assert all("late" not in frame.model_dump_json() for frame in frames)
    last_chunk = max(i for i, frame in enumerate(frames) if isinstance(frame, ChunkFrame))
    assert last_chunk < len(frames) - 1


@pytest.mark.anyio
async def test_an_over_long_line_ends_the_connection_as_a_prompt_failure(tmp_path: Path) -> None:
    spec = agent_spec(tmp_path, eof_grace_ms=200, grace_ms=200, MOCK_HUGE_CHUNK_MIB="40")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), spec) as run:
            result = await run.result()
    assert result.stop_reason == "error"
    assert result.output == []
    assert result.diagnostic is not None
    assert result.diagnostic == F + "stage: prompt; category: transport)" or result.diagnostic.startswith(
        F + "stage: process; category: process-exit; "
    )


@pytest.mark.anyio
async def test_an_eight_mib_chunk_is_delivered_whole(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), agent_spec(tmp_path, MOCK_HUGE_CHUNK_MIB="8")) as run:
            result = await run.result()
    assert result.stop_reason == "completed"
    assert result.output == [{"type": "text", "text": "x" * (8 * 1048576)}]


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["garbage", "unknown-id"])
async def test_garbage_lines_and_responses_to_unknown_ids_are_skipped(tmp_path: Path, mode: str) -> None:
    spec = agent_spec(tmp_path, args=child("noisy_then_agent.py", mode, str(FAKE_ACP_AGENT)), MOCK_TEXT="fine")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), spec) as run:
            result = await run.result()
    assert result.to_json() == {"output": [{"type": "text", "text": "fine"}], "stop_reason": "completed"}


@contextmanager
def stderr_redirected_to(path: Path) -> Generator[None]:
    """Point this process's fd 2 at ``path`` so an inheriting child's flood stays out of the test output."""
    sys.stderr.flush()
    saved = os.dup(2)
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.dup2(target, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(target)


@pytest.mark.anyio
async def test_ten_mib_on_the_inherited_stderr_does_not_stall_the_run(tmp_path: Path) -> None:
    log = tmp_path / "stderr.log"
    spec = agent_spec(tmp_path, args=child("noisy_then_agent.py", "stderr", str(FAKE_ACP_AGENT)), MOCK_TEXT="fine")
    with stderr_redirected_to(log), anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), spec) as run:
            result = await run.result()
    assert result.stop_reason == "completed"
    assert log.stat().st_size >= 10 * 1024 * 1024
    assert "e" * 100 not in (result.diagnostic or "")


@pytest.mark.anyio
async def test_a_child_killed_by_sigkill_mid_prompt_reports_the_signal(tmp_path: Path) -> None:
    pids: list[int] = []

    def record(handle: ProcessHandle) -> ProcessHandle:
        pids.append(handle.pid)
        return handle

    ready = tmp_path / "ready"
    spec = agent_spec(tmp_path, MOCK_HANG="1", MOCK_READY_FILE=str(ready))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), spec, spawn=decorated_spawn(record)) as run:
            await wait_for_file(ready)
            os.kill(pids[0], signal.SIGKILL)
            result = await run.result()
    assert result.to_json() == {
        "output": [{"type": "text", "text": "mock child answer"}],
        "diagnostic": F + "stage: process; category: process-exit; signal: SIGKILL)",
        "stop_reason": "error",
    }


@pytest.mark.anyio
async def test_a_child_that_closes_stdout_but_stays_alive_is_a_transport_failure(tmp_path: Path) -> None:
    spec = agent_spec(tmp_path, eof_grace_ms=2000, grace_ms=200, args=child("close_stdout_agent.py"))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), spec) as run:
            result = await run.result()
    assert result.to_json() == {
        "output": [],
        "diagnostic": F + "stage: prompt; category: transport)",
        "stop_reason": "error",
    }


@pytest.mark.anyio
async def test_a_setsid_grandchild_ignoring_sigterm_is_reaped_by_dispose(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    spec = agent_spec(
        tmp_path,
        eof_grace_ms=200,
        grace_ms=200,
        args=child("stubborn_grandchild_then_agent.py", str(pid_file), str(FAKE_ACP_AGENT)),
        MOCK_TEXT="fine",
    )
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), spec) as run:
            await run.result()
            pid = int(await wait_for_file(pid_file))
            assert not is_gone(pid)
    assert is_gone(pid)


@pytest.mark.anyio
@pytest.mark.parametrize("setsid", [False, True], ids=["in-group", "setsid"])
async def test_provider_dispose_reaps_the_fake_agents_grandchild(tmp_path: Path, setsid: bool) -> None:
    pid_file = tmp_path / "grandchild.pid"
    env = {"MOCK_GRANDCHILD_PID_FILE": str(pid_file)} | ({"MOCK_GRANDCHILD_SETSID": "1"} if setsid else {})
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            provider = AcpProvider(agent_entry(env, eof_grace_ms=200, grace_ms=200), task_group=group)
            run = await provider.start(make_request(parent_cwd=str(tmp_path)))
            await run.result()
            pid = int(await wait_for_file(pid_file))
            await run.dispose()
            await provider.aclose()
    assert is_gone(pid)


async def _spawn(
    argv: Sequence[str], cwd: Path, group: TaskGroup, env: Mapping[str, str] | None = None
) -> ProcessHandle:
    return await spawn_managed(argv, cwd=str(cwd), env={**os.environ, **(env or {})}, task_group=group, grace_ms=200)


@pytest.mark.anyio
async def test_ladder_tier_one_a_child_that_exits_on_eof(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            handle = await _spawn([PYTHON, str(FAKE_ACP_AGENT)], tmp_path, group)
            await run_teardown_ladder(handle, eof_grace_ms=5000, aggregate_message="x")
    assert handle.outcome is not None
    assert (handle.outcome.exit_code, handle.outcome.signal) == (0, None)


@pytest.mark.anyio
async def test_ladder_tier_two_an_eof_deaf_child_gets_sigterm(tmp_path: Path) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            handle = await _spawn([PYTHON, str(CHILDREN / "sleeper.py")], tmp_path, group)
            await run_teardown_ladder(handle, eof_grace_ms=100, aggregate_message="x")
    assert handle.outcome is not None
    assert handle.outcome.signal == "SIGTERM"


@pytest.mark.anyio
async def test_ladder_tier_three_a_sigterm_trapping_child_gets_sigkill(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    env = {"MOCK_TRAP_SIGTERM": "1", "MOCK_READY_FILE": str(ready)}
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            handle = await _spawn([PYTHON, str(FAKE_ACP_AGENT)], tmp_path, group, env)
            await wait_for_file(ready)
            await run_teardown_ladder(handle, eof_grace_ms=50, aggregate_message="x")
    assert handle.outcome is not None
    assert handle.outcome.signal == "SIGKILL"


@pytest.mark.anyio
async def test_spawn_with_a_missing_cwd_raises_synchronously(tmp_path: Path) -> None:
    with anyio.fail_after(5):
        async with task_group() as group:
            with pytest.raises(OSError):
                await _spawn([PYTHON, str(FAKE_ACP_AGENT)], tmp_path / "missing", group)


async def _conformant_run(tmp_path: Path, env: dict[str, str], *, cancel: bool, permission: str) -> None:
    client, agent = WireRecorder(), WireRecorder()
    controller = CancelController()
    ready = tmp_path / "ready"
    spec = agent_spec(
        tmp_path, env, permission="allow" if permission == "allow" else "reject", MOCK_READY_FILE=str(ready)
    )
    async with task_group() as group:
        run = await start_acp_run(
            make_request(controller.signal), spec, task_group=group, spawn=decorated_spawn(tee_wire(client, agent))
        )
        if cancel:
            await wait_for_file(ready)
            controller.cancel()
        await run.result()
        await run.dispose()
    assert_conformant(client, agent)
    assert agent.undecodable == [] and client.undecodable == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("cancel", "permission", "env"),
    [
        (False, "reject", {"MOCK_THOUGHT": "1", "MOCK_TOOL_CALL": "1"}),
        (False, "allow", {"MOCK_PERMISSION": "1", "MOCK_TOOL_KIND": "edit"}),
        (False, "reject", {"MOCK_PERMISSION": "1", "MOCK_TOOL_KIND": "execute"}),
        (True, "allow", {"MOCK_HANG": "1", "MOCK_PERMISSION_ON_CANCEL": "1"}),
    ],
    ids=["default", "permission-allow", "permission-reject", "cancel"],
)
async def test_both_directions_of_each_flow_satisfy_the_acp_schema(
    tmp_path: Path, cancel: bool, permission: str, env: dict[str, str]
) -> None:
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        await _conformant_run(tmp_path, env, cancel=cancel, permission=permission)
