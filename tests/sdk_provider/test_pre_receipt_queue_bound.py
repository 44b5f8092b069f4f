"""The DSH SDK client's pre-receipt queue has a memory bound of its own (docs/behaviour.md#sdk-client-subscription):
a runtime flooding its session before answering the prompt ends the run ``error`` / ``output-limit`` at stage
``session-run``, with nothing of the flood kept; the runtime is torn down by the ladder."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import anyio
import pytest

from host._exceptions import QueueOverflowError, TransportClosedError
from host.sdk_provider._run import start_sdk_run
from host.sdk_provider.client import SdkRunSpec, SessionNotification
from host.sdk_provider.client._subscription import Subscription, memory_size
from tests.sdk_provider._helpers import (
    PROCESS_TIMEOUT_S,
    RecordingSink,
    assert_no_secrets,
    assert_result_snapshot,
    make_request,
    run_to_result,
    runtime_spec,
    task_group,
)

pytestmark = pytest.mark.anyio

_MIB = 1 << 20


def test_the_queue_bound_defaults_to_four_times_max_output_bytes_and_at_least_one_mib() -> None:
    spec = SdkRunSpec(command="runtime", cwd="/")
    assert spec.queue_bytes == 32 * _MIB
    assert replace(spec, max_output_bytes=15).queue_bytes == _MIB
    assert replace(spec, max_output_bytes=3 * _MIB).queue_bytes == 12 * _MIB


async def test_a_flood_before_the_receipt_ends_the_run_with_the_output_limit_diagnostic(tmp_path: Path) -> None:
    # 64 MiB of chunks before the receipt against a 32 MiB queue: the prompt is never answered in time.
    spec = runtime_spec(tmp_path, FAKE_PRE_RECEIPT_FLOOD_MIB="64")
    sink = RecordingSink()
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            run = await start_sdk_run(make_request(), spec, task_group=group, on_error=sink)
            result = await run.result()
            await run.dispose()
    assert result.to_json() == {
        "output": [],
        "stop_reason": "error",
        "diagnostic": "Subagent failure (provider: DSH SDK; stage: session-run; category: output-limit)",
    }
    assert_result_snapshot("pre-receipt-queue-limit", result)
    assert [event.type for event in run.transcript] == ["run/start", "assistant/attempt", "run/end"]
    assert run.transcript[1].data["stream"] == []
    assert [type(error) for error in sink.errors] == [QueueOverflowError]
    assert_no_secrets(str(result.to_json()))


async def test_a_flood_within_the_queue_bound_is_skipped_and_the_run_completes(tmp_path: Path) -> None:
    result = await run_to_result(runtime_spec(tmp_path, FAKE_PRE_RECEIPT_FLOOD_MIB="4"))
    assert result.to_json() == {
        "output": [{"type": "text", "text": "hello from fake runtime"}],
        "stop_reason": "completed",
    }


async def test_a_smaller_max_output_bytes_lowers_the_queue_bound(tmp_path: Path) -> None:
    # 256 KiB of output: a 1 MiB queue, which 4 MiB before the receipt overflows.
    spec = replace(runtime_spec(tmp_path, FAKE_PRE_RECEIPT_FLOOD_MIB="4"), max_output_bytes=256 * 1024)
    result = await run_to_result(spec)
    assert result.stop_reason == "error"
    assert result.diagnostic == "Subagent failure (provider: DSH SDK; stage: session-run; category: output-limit)"


# -- the subscription's accounting (pure logic) ----------------------------------------------------------------


def _event(text: str) -> SessionNotification:
    return SessionNotification("session.event", {"sessionId": "s", "event": {"type": "x", "data": {"text": text}}})


def test_memory_size_counts_every_object_and_stops_past_the_room() -> None:
    value = {"a": ["x" * 1000, {"b": 1}]}
    size = memory_size(value, 10 * _MIB)
    assert size is not None and 1000 < size < 2000
    assert memory_size(value, size) == size
    assert memory_size(value, size - 1) is None


async def test_an_overflow_drops_the_queue_calls_back_once_and_fails_the_consumer() -> None:
    overflows: list[None] = []
    subscription = Subscription("s", lambda _: None, max_bytes=10_000, on_overflow=lambda: overflows.append(None))
    subscription.push(_event("small"))
    subscription.push(_event("x" * 20_000))
    subscription.push(_event("later"))
    assert subscription.overflowed and overflows == [None]
    with anyio.fail_after(1), pytest.raises(QueueOverflowError):
        await subscription.receive()
    subscription.close()
    with anyio.fail_after(1), pytest.raises(TransportClosedError):
        await subscription.receive()


async def test_notifications_pushed_while_a_receive_waits_cost_nothing() -> None:
    subscription = Subscription("s", lambda _: None, max_bytes=10_000)
    received: list[SessionNotification] = []

    async def consume() -> None:
        received.extend([await subscription.receive() for _ in range(3)])

    with anyio.fail_after(1):
        async with anyio.create_task_group() as group:
            group.start_soon(consume)
            await anyio.wait_all_tasks_blocked()
            # The consumer waits: these are handed over before the reader reads again, so they are not counted.
            for _ in range(3):
                subscription.push(_event("x" * 20_000))
    assert len(received) == 3 and not subscription.overflowed
    # Queued while nobody waits, the same notification passes the bound.
    subscription.push(_event("x" * 20_000))
    assert subscription.overflowed
