"""Startup: pre-abort, cwd resolution, handshake failures, the rejection forms and their cleanup
(docs/behaviour.md#sdk-acceptance group C)."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest

from host._exceptions import AggregateError, RequestTimeoutError, SdkRunFailure, StartAbortedError
from host.cancel import CancelController
from host.run._contracts import SubagentRun
from host.sdk_provider import DshSdkProvider
from host.sdk_provider._run import start_sdk_run
from host.sdk_provider.client import SdkRunSpec
from tests.sdk_provider._helpers import (
    PROCESS_TIMEOUT_S,
    R,
    RecordingSink,
    assert_no_secrets,
    make_request,
    pid_alive,
    runtime_entry,
    runtime_spec,
    task_group,
    wait_for_file,
)
from tests.sdk_provider._seams import (
    CLEANUP_FAILURE,
    FailingHandshakeClient,
    ForwardingClient,
    ReapThenRaiseClient,
    recording_factory,
)

ABORTED = "subagent request was aborted before the SDK child started"


def _aborted_controller() -> CancelController:
    controller = CancelController()
    controller.cancel("stop")
    return controller


@pytest.mark.anyio
async def test_a_pre_cancelled_run_entry_spawns_nothing(tmp_path: Path) -> None:
    sentinel = tmp_path / "sentinel"
    spec = SdkRunSpec(command="/bin/sh", args=("-c", f"touch {sentinel}"), cwd=str(tmp_path))
    sink = RecordingSink()
    with anyio.fail_after(5):
        async with task_group() as group:
            with pytest.raises(StartAbortedError) as caught:
                await start_sdk_run(make_request(_aborted_controller().signal), spec, task_group=group, on_error=sink)
    assert str(caught.value) == ABORTED
    assert not sentinel.exists() and sink.calls == []


@pytest.mark.anyio
async def test_a_pre_cancelled_provider_entry_checks_before_the_cwd(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    with anyio.fail_after(5):
        async with task_group() as group:
            provider = DshSdkProvider(runtime_entry(), task_group=group)
            with pytest.raises(StartAbortedError, match=f"^{ABORTED}$"):
                await provider.start(make_request(_aborted_controller().signal, parent_cwd=None))
    assert caplog.records == []


@pytest.mark.anyio
async def test_a_runtime_dying_before_init_is_a_transport_startup_failure(tmp_path: Path) -> None:
    spec = runtime_spec(
        tmp_path, FAKE_EXIT_BEFORE_INIT="1", FAKE_STDERR="scripted boot failure at /private/path SECRET_TOKEN"
    )
    sink = RecordingSink()
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            with pytest.raises(SdkRunFailure) as caught:
                await start_sdk_run(make_request(), spec, task_group=group, on_error=sink)
    error = caught.value
    assert f"{type(error).__name__}: {error}" == (
        "SdkRunFailure: subagent-dsh-sdk: Subagent failure (provider: DSH SDK; stage: initialize; category: transport)"
    )
    assert error.facts == {"stage": "initialize", "category": "transport"}
    assert "exit code: 3" in str(error.__cause__)
    assert len(sink.calls) == 1


@pytest.mark.anyio
@pytest.mark.parametrize("switch", ["FAKE_MALFORMED", "FAKE_INIT_ERROR"])
async def test_a_refused_or_malformed_handshake_is_a_protocol_startup_failure(tmp_path: Path, switch: str) -> None:
    made: list[ForwardingClient] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            with pytest.raises(SdkRunFailure) as caught:
                await start_sdk_run(
                    make_request(),
                    runtime_spec(tmp_path, env={switch: "1"}),
                    task_group=group,
                    client_factory=recording_factory(ForwardingClient, made),
                )
    assert str(caught.value) == R("initialize", "protocol")
    pid = made[0].inner.pid
    assert made[0].aclose_calls == 1 and pid is not None and not pid_alive(pid)


@pytest.mark.anyio
async def test_a_failed_handshake_with_a_failed_cleanup_raises_both_forms(tmp_path: Path) -> None:
    sink = RecordingSink()
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            with pytest.raises(AggregateError) as caught:
                await start_sdk_run(
                    make_request(),
                    runtime_spec(tmp_path, FAKE_MALFORMED="1"),
                    task_group=group,
                    on_error=sink,
                    client_factory=recording_factory(ReapThenRaiseClient, []),
                )
    assert str(caught.value) == f"{R('initialize', 'protocol')}; {R('shutdown', 'unknown')}"
    assert len(caught.value.errors) == 2
    assert_no_secrets(str(caught.value), *(str(e) for e in caught.value.errors))
    assert len(sink.calls) == 2 and str(sink.errors[1]) == CLEANUP_FAILURE


async def _start_then_cancel(
    spec: SdkRunSpec, made: list[ForwardingClient], cls: type[ForwardingClient], sink: RecordingSink | None = None
) -> BaseException:
    """Start a run in a task, cancel once the client's handshake began, and return what ``start`` raised."""
    controller = CancelController()
    raised: list[BaseException] = []

    async def start(group: anyio.abc.TaskGroup) -> None:
        try:
            run: SubagentRun = await start_sdk_run(
                make_request(controller.signal),
                spec,
                task_group=group,
                on_error=sink,
                client_factory=recording_factory(cls, made),
            )
        except Exception as exc:
            raised.append(exc)
        else:
            await run.dispose()
            raise AssertionError("start_sdk_run returned a run")

    async with task_group() as group:
        async with anyio.create_task_group() as starter:
            starter.start_soon(start, group)
            await anyio.wait_all_tasks_blocked()  # the starter has built its client and is inside the handshake
            await made[0].start_entered.wait()
            controller.cancel("stop")
    return raised[0]


@pytest.mark.anyio
async def test_a_cancel_during_a_hung_handshake_with_a_failed_cleanup_keeps_only_the_cleanup(tmp_path: Path) -> None:
    made: list[ForwardingClient] = []
    sink = RecordingSink()
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        error = await _start_then_cancel(runtime_spec(tmp_path, FAKE_HANG_INIT="1"), made, ReapThenRaiseClient, sink)
    assert isinstance(error, AggregateError)
    assert str(error) == R("shutdown", "unknown") and len(error.errors) == 1
    assert_no_secrets(str(error))
    assert [str(e) for e in sink.errors] == [CLEANUP_FAILURE]


@pytest.mark.anyio
async def test_a_handshake_failure_that_settled_first_wins_over_a_later_cancel(tmp_path: Path) -> None:
    made: list[ForwardingClient] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        error = await _start_then_cancel(runtime_spec(tmp_path), made, FailingHandshakeClient)
    assert isinstance(error, SdkRunFailure) and str(error) == R("initialize", "protocol")
    assert made[0].aclose_calls == 1


@pytest.mark.anyio
async def test_a_cancel_between_ready_and_go_aborts_and_reaps_the_child(tmp_path: Path) -> None:
    ready, go = tmp_path / "ready", tmp_path / "go"
    made: list[ForwardingClient] = []
    controller = CancelController()
    raised: list[BaseException] = []
    spec = runtime_spec(tmp_path, FAKE_INIT_READY=str(ready), FAKE_INIT_GO=str(go))

    async def start(group: anyio.abc.TaskGroup) -> None:
        try:
            await start_sdk_run(
                make_request(controller.signal),
                spec,
                task_group=group,
                client_factory=recording_factory(ForwardingClient, made),
            )
        except StartAbortedError as exc:
            raised.append(exc)

    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            async with anyio.create_task_group() as starter:
                starter.start_soon(start, group)
                await wait_for_file(ready)
                controller.cancel("stop")
                go.write_text("go\n", encoding="utf-8")
    assert [str(e) for e in raised] == [ABORTED]
    pid = made[0].inner.pid
    assert pid is not None and not pid_alive(pid) and made[0].aclose_calls == 1


@pytest.mark.anyio
async def test_a_cancel_during_a_hung_initialize_aborts(tmp_path: Path) -> None:
    made: list[ForwardingClient] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        error = await _start_then_cancel(runtime_spec(tmp_path, FAKE_HANG_INIT="1"), made, ForwardingClient)
    assert isinstance(error, StartAbortedError) and str(error) == ABORTED
    assert made[0].aclose_calls == 1


@pytest.mark.anyio
@pytest.mark.parametrize("parent_cwd", [None, "relative/dir", "/nonexistent/private/path"])
async def test_an_unresolvable_cwd_is_a_configuration_failure_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, parent_cwd: str | None
) -> None:
    caplog.set_level(logging.WARNING)
    made: list[ForwardingClient] = []
    with anyio.fail_after(5):
        async with task_group() as group:
            provider = DshSdkProvider(
                runtime_entry(), task_group=group, client_factory=recording_factory(ForwardingClient, made)
            )
            with pytest.raises(SdkRunFailure) as caught:
                await provider.start(make_request(parent_cwd=parent_cwd))
    assert str(caught.value) == R("initialize", "configuration")
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and warnings[0].startswith('subagent-dsh-sdk "dsh-sdk": child start failed: ConfigError(')
    assert made == []


@pytest.mark.anyio
async def test_a_non_enterable_parent_cwd_is_a_configuration_failure(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o600)
    with anyio.fail_after(5):
        async with task_group() as group:
            provider = DshSdkProvider(runtime_entry(), task_group=group)
            with pytest.raises(SdkRunFailure, match="category: configuration"):
                await provider.start(make_request(parent_cwd=str(tmp_path / "file-not-dir")))
            if not _running_as_root():
                with pytest.raises(SdkRunFailure, match="category: configuration"):
                    await provider.start(make_request(parent_cwd=str(locked)))
    locked.chmod(0o700)


def _running_as_root() -> bool:
    import os

    return os.geteuid() == 0


@pytest.mark.anyio
async def test_a_nonexistent_command_is_a_transport_startup_failure(tmp_path: Path) -> None:
    sink = RecordingSink()
    with anyio.fail_after(5):
        async with task_group() as group:
            provider = DshSdkProvider(
                runtime_entry(command=str(tmp_path / "no-such-runtime"), args=()), task_group=group
            )
            with pytest.raises(SdkRunFailure) as caught:
                await start_sdk_run(
                    make_request(),
                    runtime_spec(tmp_path, command=str(tmp_path / "nope"), args=()),
                    task_group=group,
                    on_error=sink,
                )
            with pytest.raises(SdkRunFailure, match="category: transport"):
                await provider.start(make_request(parent_cwd=str(tmp_path)))
    assert str(caught.value) == R("initialize", "transport") and len(sink.calls) == 1


@pytest.mark.anyio
async def test_an_unanswered_initialize_times_out_and_the_child_is_reaped(tmp_path: Path) -> None:
    made: list[ForwardingClient] = []
    sink = RecordingSink()
    spec = runtime_spec(tmp_path, FAKE_HANG_INIT="1")
    spec = SdkRunSpec(
        command=spec.command,
        args=spec.args,
        cwd=spec.cwd,
        env=spec.env,
        initialize_timeout_ms=200,
        shutdown_timeout_ms=100,
        dispose_eof_grace_ms=200,
        dispose_grace_ms=200,
    )
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            with pytest.raises(SdkRunFailure) as caught:
                await start_sdk_run(
                    make_request(),
                    spec,
                    task_group=group,
                    on_error=sink,
                    client_factory=recording_factory(ForwardingClient, made),
                )
    assert str(caught.value) == R("initialize", "timeout")
    assert [type(e) for e in sink.errors] == [RequestTimeoutError]
    pid = made[0].inner.pid
    assert pid is not None and not pid_alive(pid)


@pytest.mark.anyio
async def test_a_cancel_during_the_handshake_makes_no_sink_call_and_reaps_the_child(tmp_path: Path) -> None:
    # docs/behaviour.md#sdk-startup-rejections: "cancelled during the handshake, cleanup OK" has 0 sink calls and the
    # child is reaped by aclose().
    made: list[ForwardingClient] = []
    sink = RecordingSink()
    controller = CancelController()
    raised: list[BaseException] = []
    record = tmp_path / "init.jsonl"

    async def start(group: anyio.abc.TaskGroup) -> None:
        try:
            await start_sdk_run(
                make_request(controller.signal),
                runtime_spec(tmp_path, FAKE_HANG_INIT="1", FAKE_RECORD_INIT=str(record)),
                task_group=group,
                on_error=sink,
                client_factory=recording_factory(ForwardingClient, made),
            )
        except (StartAbortedError, AggregateError) as exc:
            raised.append(exc)

    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            async with anyio.create_task_group() as starter:
                starter.start_soon(start, group)
                await wait_for_file(record)  # the runtime has received initialize and will never answer
                controller.cancel("stop")
    assert [type(e) for e in raised] == [StartAbortedError]
    assert sink.calls == []
    pid = made[0].inner.pid
    assert pid is not None and not pid_alive(pid) and made[0].aclose_calls == 1
