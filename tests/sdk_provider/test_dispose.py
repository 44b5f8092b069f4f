"""Cancellation and dispose of published runs (docs/behaviour.md#sdk-acceptance group D)."""

from __future__ import annotations

import gc
from pathlib import Path

import anyio
import pytest

from host._exceptions import SdkRunFailure, SubagentHostError
from host.cancel import CancelController
from host.sdk_provider import DshSdkProvider
from host.sdk_provider._run import start_sdk_run
from host.sdk_provider.client import SdkRunSpec
from host.stream import ChunkFrame, StreamFrame
from tests.sdk_provider._helpers import (
    PROCESS_TIMEOUT_S,
    R,
    RecordingSink,
    assert_no_secrets,
    assert_result_snapshot,
    make_request,
    pid_alive,
    runtime_entry,
    runtime_spec,
    task_group,
    text_blocks,
    wait_for_file,
)
from tests.sdk_provider._seams import CLEANUP_FAILURE, ForwardingClient, ReapThenRaiseClient, recording_factory


@pytest.mark.anyio
async def test_a_cancel_after_publication_settles_aborted_and_dispose_reaps(tmp_path: Path) -> None:
    made: list[ForwardingClient] = []
    controller = CancelController()
    sink = RecordingSink()
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            run = await start_sdk_run(
                make_request(controller.signal),
                runtime_spec(tmp_path, FAKE_HANG_PROMPT="1"),
                task_group=group,
                on_error=sink,
                client_factory=recording_factory(ForwardingClient, made),
            )
            controller.cancel("stop")
            with anyio.fail_after(1):
                result = await run.result()
            pid = made[0].inner.pid
            assert pid is not None and pid_alive(pid)  # the child lives until dispose
            await run.dispose()
    assert result.to_json() == {"output": [], "stop_reason": "aborted"}
    assert not pid_alive(pid) and sink.calls == []
    gc.collect()


@pytest.mark.anyio
async def test_dispose_without_cancel_settles_aborted_and_returns_after_exit(tmp_path: Path) -> None:
    made: list[ForwardingClient] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            run = await start_sdk_run(
                make_request(),
                runtime_spec(tmp_path, FAKE_HANG_PROMPT="1"),
                task_group=group,
                client_factory=recording_factory(ForwardingClient, made),
            )
            await run.dispose()
            pid = made[0].inner.pid
            assert pid is not None and not pid_alive(pid)
            result = await run.result()
    assert result.stop_reason == "aborted" and result.diagnostic is None
    gc.collect()


@pytest.mark.anyio
async def test_a_failed_close_after_completion_fails_dispose_safely(tmp_path: Path) -> None:
    sink = RecordingSink()
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            run = await start_sdk_run(
                make_request(),
                runtime_spec(tmp_path),
                task_group=group,
                on_error=sink,
                client_factory=recording_factory(ReapThenRaiseClient, []),
            )
            result = await run.result()
            with pytest.raises(SdkRunFailure) as first:
                await run.dispose()
            with pytest.raises(SdkRunFailure) as second:
                await run.dispose()
    assert str(first.value) == R("shutdown", "unknown") and second.value is first.value
    assert_no_secrets(str(first.value))
    assert [str(e) for e in sink.errors] == [CLEANUP_FAILURE]
    assert result.stop_reason == "completed"
    assert_result_snapshot("D3-completed-before-failed-dispose", result)


@pytest.mark.anyio
async def test_dispose_and_cancel_after_settlement_change_nothing(tmp_path: Path) -> None:
    made: list[ForwardingClient] = []
    controller = CancelController()
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            run = await start_sdk_run(
                make_request(controller.signal),
                runtime_spec(tmp_path),
                task_group=group,
                client_factory=recording_factory(ForwardingClient, made),
            )
            before = await run.result()
            controller.cancel("late")
            pid = made[0].inner.pid
            assert pid is not None and pid_alive(pid)
            await run.dispose()
            await run.dispose()
            after = await run.result()
    assert before is after and after.stop_reason == "completed"
    assert made[0].aclose_calls == 1


@pytest.mark.anyio
@pytest.mark.parametrize(("trap", "grace_ms"), [(False, 1000.0), (True, 300.0)], ids=["sigterm", "sigkill"])
async def test_the_provider_ladder_escalates_for_a_runtime_ignoring_eof(
    tmp_path: Path, trap: bool, grace_ms: float
) -> None:
    marker = tmp_path / "sigterm"
    env = {"FAKE_IGNORE_EOF": "1", "FAKE_SIGTERM_FILE": str(marker)}
    if trap:
        env["FAKE_TRAP_SIGTERM"] = "1"
    entry = runtime_entry(env=env).model_copy(
        update={"shutdown_timeout_ms": 100.0, "dispose_eof_grace_ms": 100.0, "dispose_grace_ms": grace_ms}
    )
    made: list[ForwardingClient] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            provider = DshSdkProvider(entry, task_group=group, client_factory=recording_factory(ForwardingClient, made))
            run = await provider.start(make_request(parent_cwd=str(tmp_path)))
            await run.result()
            await run.dispose()
    assert marker.exists()
    pid = made[0].inner.pid
    assert pid is not None and not pid_alive(pid)


@pytest.mark.anyio
@pytest.mark.parametrize("setsid", [False, True], ids=["in-group", "setsid"])
async def test_dispose_reaps_the_runtimes_grandchild(tmp_path: Path, setsid: bool) -> None:
    pid_file = tmp_path / "grandchild.pid"
    env = {"FAKE_GRANDCHILD_PID_FILE": str(pid_file)}
    if setsid:
        env["FAKE_GRANDCHILD_SETSID"] = "1"
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            run = await start_sdk_run(make_request(), runtime_spec(tmp_path, env=env), task_group=group)
            grandchild = int((await wait_for_file(pid_file)).strip())
            await run.result()
            await run.dispose()
    assert not pid_alive(grandchild)


@pytest.mark.anyio
async def test_a_cancel_after_a_streamed_chunk_keeps_the_deltas(tmp_path: Path) -> None:
    controller = CancelController()
    chunk_seen = anyio.Event()

    def on_frame(frame: StreamFrame) -> None:
        if isinstance(frame, ChunkFrame):
            chunk_seen.set()

    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            run = await start_sdk_run(
                make_request(controller.signal, on_frame=on_frame),
                runtime_spec(tmp_path, FAKE_HANG_AFTER_CHUNK="1"),
                task_group=group,
            )
            await chunk_seen.wait()
            controller.cancel("stop")
            result = await run.result()
            await run.dispose()
    assert result.to_json() == {"output": text_blocks("hello from fake runtime"), "stop_reason": "aborted"}
    assert_result_snapshot("D9-cancel-after-chunk", result)


@pytest.mark.anyio
async def test_a_cancelled_run_leaves_no_unretrieved_background_errors(tmp_path: Path) -> None:
    # filterwarnings=error turns an unretrieved task exception or an unclosed stream into a failure here.
    controller = CancelController()
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            run = await start_sdk_run(
                make_request(controller.signal), runtime_spec(tmp_path, FAKE_HANG_PROMPT="1"), task_group=group
            )
            controller.cancel()
            await run.dispose()
    gc.collect()


@pytest.mark.anyio
async def test_provider_aclose_disposes_live_runs_and_refuses_new_ones(tmp_path: Path) -> None:
    made: list[ForwardingClient] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            provider = DshSdkProvider(
                runtime_entry(name="sdk-hmr", FAKE_HANG_PROMPT="1"),
                task_group=group,
                client_factory=recording_factory(ForwardingClient, made),
            )
            assert (provider.name, provider.kind, provider.capabilities.agent_options) == ("sdk-hmr", "dsh-sdk", True)
            run = await provider.start(make_request(parent_cwd=str(tmp_path)))
            await provider.aclose()
            await provider.aclose()
            result = await run.result()
            with pytest.raises(SubagentHostError):
                await provider.start(make_request(parent_cwd=str(tmp_path)))
    assert result.stop_reason == "aborted"
    pid = made[0].inner.pid
    assert pid is not None and not pid_alive(pid)


def test_spec_defaults_match_the_config_defaults() -> None:
    spec = SdkRunSpec(command="rt", cwd="/")
    assert (spec.shutdown_timeout_ms, spec.dispose_eof_grace_ms, spec.dispose_grace_ms, spec.initialize_timeout_ms) == (
        1000.0,
        6000.0,
        3000.0,
        10000.0,
    )
