"""Settlement of a published run's result (docs/behaviour.md#results-settlement, acceptance 1–7)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

import anyio
import pytest

from host.cancel import CancelController, CancelSignal
from host.diagnostics import SubagentResult
from host.run._lifecycle import call_error_sink, settle_run_result

PARTIAL = [{"type": "text", "text": "partial"}]


@dataclass
class RecordingSink:
    calls: list[tuple[BaseException, str]] = field(default_factory=list[tuple[BaseException, str]])
    raises: bool = False

    def __call__(self, error: BaseException, reason: Literal["error"]) -> None:
        self.calls.append((error, reason))
        if self.raises:
            raise RuntimeError("sink broke")


@dataclass
class Harness:
    """A run's cancel bookkeeping as a provider keeps it: a flag set by a real signal listener."""

    controller: CancelController = field(default_factory=CancelController)
    cancelled: bool = False
    listener_calls: int = 0

    def __post_init__(self) -> None:
        self.remove_listener = self.controller.signal.add_listener(self._on_cancel)

    def _on_cancel(self, signal: CancelSignal) -> None:
        self.listener_calls += 1
        self.cancelled = True

    def is_cancelled(self) -> bool:
        return self.cancelled


def returning(result: SubagentResult) -> Callable[[], Awaitable[SubagentResult]]:
    async def attempt() -> SubagentResult:
        return result

    return attempt


def raising(error: Exception, before: Callable[[], None] | None = None) -> Callable[[], Awaitable[SubagentResult]]:
    async def attempt() -> SubagentResult:
        if before is not None:
            before()
        raise error

    return attempt


async def settle(
    harness: Harness,
    attempt: Callable[[], Awaitable[SubagentResult]],
    sink: RecordingSink | None = None,
    collect_diagnostic: Callable[[], str | None] | None = None,
) -> SubagentResult:
    with anyio.fail_after(5):
        return await settle_run_result(
            attempt,
            collect_output=lambda: list(PARTIAL),
            collect_diagnostic=collect_diagnostic,
            cancelled=harness.is_cancelled,
            on_error=sink,
            remove_listener=harness.remove_listener,
        )


@pytest.mark.anyio
async def test_successful_attempt_passes_through_and_the_listener_is_removed_afterwards() -> None:
    harness = Harness()
    done = SubagentResult(output=[{"type": "text", "text": "answer"}], stop_reason="completed")

    result = await settle(harness, returning(done))

    assert result == done
    harness.controller.cancel()
    assert harness.listener_calls == 0


@pytest.mark.anyio
async def test_attempt_raising_after_cancellation_settles_aborted_with_partial_output_and_no_sink_call() -> None:
    harness = Harness()
    sink = RecordingSink()

    result = await settle(harness, raising(RuntimeError("pipe closed"), before=harness.controller.cancel), sink)

    assert result.to_json() == {"output": PARTIAL, "stop_reason": "aborted"}
    assert sink.calls == []


@pytest.mark.anyio
async def test_attempt_raising_with_a_raising_sink_settles_error_and_the_sink_saw_the_raw_error() -> None:
    harness = Harness()
    sink = RecordingSink(raises=True)
    raw = RuntimeError("raw SECRET_TOKEN")

    result = await settle(harness, raising(raw), sink)

    assert result.to_json() == {"output": PARTIAL, "stop_reason": "error"}
    assert sink.calls == [(raw, "error")]


@pytest.mark.anyio
async def test_attempt_raising_without_a_sink_settles_error() -> None:
    result = await settle(Harness(), raising(RuntimeError("boom")))

    assert result.to_json() == {"output": PARTIAL, "stop_reason": "error"}


@pytest.mark.anyio
async def test_attempt_raising_takes_the_bounded_collected_diagnostic() -> None:
    result = await settle(Harness(), raising(RuntimeError("boom")), collect_diagnostic=lambda: "d" * 5000)

    assert result.stop_reason == "error"
    assert result.diagnostic is not None
    assert len(result.diagnostic.encode("utf-8")) == 4096
    assert result.diagnostic.endswith("\n[diagnostic truncated]")


@pytest.mark.anyio
async def test_attempt_raising_with_a_collector_returning_nothing_has_no_diagnostic() -> None:
    result = await settle(Harness(), raising(RuntimeError("boom")), collect_diagnostic=lambda: None)

    assert result.to_json() == {"output": PARTIAL, "stop_reason": "error"}


@pytest.mark.anyio
async def test_completed_attempt_with_the_cancel_flag_set_settles_aborted_with_partial_output() -> None:
    harness = Harness()
    harness.controller.cancel()
    completed = SubagentResult(output=[{"type": "text", "text": "full"}], stop_reason="completed")

    result = await settle(harness, returning(completed))

    assert result.to_json() == {"output": PARTIAL, "stop_reason": "aborted"}


@pytest.mark.anyio
async def test_provider_returned_completed_with_a_diagnostic_is_stripped() -> None:
    returned = SubagentResult(stop_reason="completed", diagnostic="should not survive")

    result = await settle(Harness(), returning(returned))

    assert result.to_json() == {"output": [], "stop_reason": "completed"}


@pytest.mark.anyio
async def test_provider_returned_oversized_error_diagnostic_is_bounded() -> None:
    returned = SubagentResult(stop_reason="error", diagnostic="权限" * 4096)

    result = await settle(Harness(), returning(returned))

    assert result.diagnostic is not None
    assert len(result.diagnostic.encode("utf-8")) == 4094


@pytest.mark.anyio
async def test_provider_returned_plain_error_stays_without_a_diagnostic_key() -> None:
    result = await settle(Harness(), returning(SubagentResult(stop_reason="error")))

    assert result.to_json() == {"output": [], "stop_reason": "error"}


@pytest.mark.anyio
async def test_remote_non_completed_outcome_resolves_normally_without_a_sink_call() -> None:
    sink = RecordingSink()
    returned = SubagentResult(stop_reason="refusal", diagnostic="ACP unattended decision (x)")

    result = await settle(Harness(), returning(returned), sink)

    assert result == returned
    assert sink.calls == []


def test_call_error_sink_swallows_a_raising_sink_with_a_debug_log(caplog: pytest.LogCaptureFixture) -> None:
    sink = RecordingSink(raises=True)
    raw = ValueError("raw")

    with caplog.at_level(logging.DEBUG, logger="host.diagnostics"):
        call_error_sink(sink, raw)

    assert sink.calls == [(raw, "error")]
    assert [record.levelno for record in caplog.records] == [logging.DEBUG]


def test_call_error_sink_without_a_sink_does_nothing() -> None:
    call_error_sink(None, ValueError("raw"))
