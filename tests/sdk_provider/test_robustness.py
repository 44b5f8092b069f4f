"""Robustness against hostile or broken runtimes: floods, huge frames, foreign sessions, early idles, dead runtimes,
and planted secrets that must never become model-visible."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest

from host._exceptions import AggregateError, SdkRunFailure
from host.sdk_provider import DshSdkProvider, start_sdk_run
from host.sdk_provider.client import STDERR_TAIL_LINES
from tests.sdk_provider._helpers import (
    PROCESS_TIMEOUT_S,
    D,
    RecordingSink,
    assert_no_secrets,
    make_request,
    run_to_result,
    runtime_entry,
    runtime_spec,
    task_group,
    text_blocks,
)
from tests.sdk_provider._seams import ForwardingClient, ReapThenRaiseClient, recording_factory

PATCHED = str(Path(__file__).resolve().parent / "children" / "patched_runtime.py")


@pytest.mark.anyio
async def test_a_ten_mib_stderr_flood_keeps_a_bounded_tail_and_the_run_completes(tmp_path: Path) -> None:
    made: list[ForwardingClient] = []
    spec = runtime_spec(tmp_path, args=[PATCHED], PATCH_STDERR_FLOOD_BYTES=str(10 * 1024 * 1024), FAKE_TEXT="survived")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            run = await start_sdk_run(
                make_request(), spec, task_group=group, client_factory=recording_factory(ForwardingClient, made)
            )
            result = await run.result()
            tail = made[0].inner.stderr_tail
            await run.dispose()
    assert result.to_json() == {"output": text_blocks("survived"), "stop_reason": "completed"}
    assert 0 < len(tail) <= STDERR_TAIL_LINES
    assert_no_secrets(str(result.to_json()))


@pytest.mark.anyio
async def test_an_eight_mib_assistant_message_is_delivered_whole(tmp_path: Path) -> None:
    size = 8 * 1024 * 1024
    spec = runtime_spec(tmp_path, args=[PATCHED], PATCH_HUGE_TEXT_BYTES=str(size), FAKE_REASON_KIND="completed")
    result = await run_to_result(spec)
    assert result.stop_reason == "completed"
    assert len(result.output) == 1 and len(result.output[0]["text"]) == size


@pytest.mark.anyio
async def test_interleaved_foreign_sessions_never_reach_the_run(tmp_path: Path) -> None:
    result = await run_to_result(
        runtime_spec(tmp_path, args=[PATCHED], PATCH_FOREIGN_SESSIONS="1", FAKE_REASON_KIND="completed")
    )
    assert result.to_json() == {"output": text_blocks("hello from fake runtime"), "stop_reason": "completed"}


@pytest.mark.anyio
async def test_a_foreign_error_turn_does_not_contaminate_the_root(tmp_path: Path) -> None:
    # The foreign copy of every root event arrives first, including a foreign idle before the root's own turn ends.
    env = {"PATCH_FOREIGN_SESSIONS": "1", "FAKE_TWO_TURNS": "1", "FAKE_TEXT": "root answer"}
    result = await run_to_result(runtime_spec(tmp_path, args=[PATCHED], env=env))
    assert result.to_json() == {"output": text_blocks("root answer"), "stop_reason": "completed"}


@pytest.mark.anyio
async def test_an_idle_before_the_receipt_does_not_end_the_run(tmp_path: Path) -> None:
    result = await run_to_result(runtime_spec(tmp_path, FAKE_PRE_RECEIPT_NOISE="1", FAKE_TEXT="after receipt"))
    assert result.to_json() == {"output": text_blocks("after receipt"), "stop_reason": "completed"}


@pytest.mark.anyio
async def test_a_runtime_exiting_mid_turn_keeps_the_partial_output_as_transport(tmp_path: Path) -> None:
    env = {"FAKE_EXIT_DURING_PROMPT": "1", "FAKE_TEXT": "kept", "FAKE_STDERR": "/private/path SECRET_TOKEN"}
    sink = RecordingSink()
    result = await run_to_result(runtime_spec(tmp_path, env=env), on_error=sink)
    assert result.to_json() == {
        "output": text_blocks("kept"),
        "stop_reason": "error",
        "diagnostic": D("session-run", "transport"),
    }
    # The raw, host-only error holds the exit code and the stderr tail; the result holds neither.
    assert "exit code: 17" in str(sink.errors[0]) and "SECRET_TOKEN" in str(sink.errors[0])


@pytest.mark.anyio
async def test_secrets_in_stderr_errors_and_child_messages_never_reach_results_or_raised_texts(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    secret = "/private/path SECRET_TOKEN"
    texts: list[str] = []
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            for env in (
                {"FAKE_PROMPT_ERROR": "1", "FAKE_STDERR": secret},
                {"FAKE_REASON_KIND": "error", "FAKE_STDERR": secret},
                {"FAKE_REASON_KIND": f"{secret}"},
            ):
                provider = DshSdkProvider(runtime_entry(env=env), task_group=group)
                run = await provider.start(make_request(parent_cwd=str(tmp_path)))
                texts.append(str((await run.result()).to_json()))
                await run.dispose()
            for env in (
                {"FAKE_INIT_ERROR": "1", "FAKE_STDERR": secret},
                {"FAKE_EXIT_BEFORE_INIT": "1", "FAKE_STDERR": secret},
            ):
                with pytest.raises(SdkRunFailure) as caught:
                    await DshSdkProvider(runtime_entry(env=env), task_group=group).start(
                        make_request(parent_cwd=str(tmp_path))
                    )
                texts.append(str(caught.value))
            with pytest.raises(AggregateError) as aggregate:
                await start_sdk_run(
                    make_request(),
                    runtime_spec(tmp_path, FAKE_MALFORMED="1", FAKE_STDERR=secret),
                    task_group=group,
                    client_factory=recording_factory(ReapThenRaiseClient, []),
                )
            texts.append(str(aggregate.value))
    assert_no_secrets(*texts)
    # The host log is where raw text belongs.
    assert any("SECRET_TOKEN" in r.getMessage() for r in caplog.records)
