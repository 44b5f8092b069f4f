"""The deadline helper, TimeoutReason, format_ms and timeout_of (docs/behaviour.md#registry-deadline, scenarios
68–76)."""

from __future__ import annotations

import math

import anyio
import pytest

from host._json import format_ms
from host.cancel import MAX_TIMER_DELAY_MS, CancelController, TimeoutReason, deadline, timeout_of

RANGE_MESSAGE = "deadline timeout_ms must be a positive finite number no greater than 2147483647"


def test_timeout_reason_carries_code_and_budget_and_formats_its_text() -> None:
    reason = TimeoutReason("BASH_TIMEOUT", 100)
    assert reason.code == "BASH_TIMEOUT"
    assert reason.timeout_ms == 100
    assert str(reason) == "BASH_TIMEOUT after 100ms"
    assert str(TimeoutReason("X", 100.0)) == "X after 100ms"
    assert str(TimeoutReason("X", 1.5)) == "X after 1.5ms"


def test_format_ms_prints_like_a_json_number() -> None:
    assert format_ms(100) == "100"
    assert format_ms(100.0) == "100"
    assert format_ms(1.5) == "1.5"
    assert format_ms(0.1) == "0.1"
    assert MAX_TIMER_DELAY_MS == 2147483647


@pytest.mark.anyio
async def test_deadline_without_upstream_cancels_with_a_timeout_reason() -> None:
    with anyio.fail_after(5):
        async with deadline(None, 50, "X") as signal:
            await signal.wait()
    reason = timeout_of(signal, "X")
    assert reason is not None
    assert reason.code == "X" and reason.timeout_ms == 50


@pytest.mark.anyio
async def test_leaving_the_deadline_block_early_disarms_the_timer() -> None:
    with anyio.fail_after(5):
        async with deadline(None, 20, "X") as signal:
            pass
        # Wait well past the budget on an independent timer: nothing may fire.
        async with deadline(None, 100, "WITNESS") as witness:
            await witness.wait()
    assert not signal.cancelled


@pytest.mark.parametrize("timeout_ms", [2147483648, math.inf, math.nan, -math.inf])
def test_deadline_rejects_non_finite_or_oversized_budgets(timeout_ms: float) -> None:
    with pytest.raises(ValueError) as caught:
        deadline(None, timeout_ms, "X")
    assert str(caught.value) == RANGE_MESSAGE


@pytest.mark.anyio
async def test_upstream_cancelling_first_gives_its_reason_and_no_timeout() -> None:
    upstream = CancelController()
    with anyio.fail_after(5):
        async with deadline(upstream.signal, 5000, "X") as signal:
            assert signal is not upstream.signal
            upstream.cancel("user")
            assert signal.cancelled
    assert signal.reason == "user"
    assert timeout_of(signal) is None
    assert timeout_of(signal, "X") is None


@pytest.mark.anyio
async def test_timer_firing_first_wins_over_a_later_upstream_cancel() -> None:
    upstream = CancelController()
    with anyio.fail_after(5):
        async with deadline(upstream.signal, 30, "X") as signal:
            await signal.wait()
            upstream.cancel("user")
    reason = timeout_of(signal, "X")
    assert reason is not None and reason is signal.reason


@pytest.mark.anyio
async def test_pre_cancelled_upstream_yields_an_already_cancelled_signal() -> None:
    upstream = CancelController()
    upstream.cancel("early")
    with anyio.fail_after(5):
        async with deadline(upstream.signal, 1000, "X") as signal:
            assert signal.cancelled
            assert signal.reason == "early"


@pytest.mark.parametrize("timeout_ms", [0, -1, -0.5])
@pytest.mark.anyio
async def test_non_positive_budget_yields_the_upstream_itself(timeout_ms: float) -> None:
    upstream = CancelController()
    with anyio.fail_after(5):
        async with deadline(upstream.signal, timeout_ms, "X") as signal:
            assert signal is upstream.signal


@pytest.mark.anyio
async def test_non_positive_budget_without_upstream_yields_a_never_cancelling_signal() -> None:
    with anyio.fail_after(5):
        async with deadline(None, 0, "X") as signal:
            await anyio.wait_all_tasks_blocked()
            assert not signal.cancelled


@pytest.mark.anyio
async def test_an_error_inside_the_deadline_block_propagates_unwrapped() -> None:
    with anyio.fail_after(5):
        with pytest.raises(RuntimeError, match="^inner$"):
            async with deadline(None, 1000, "X"):
                raise RuntimeError("inner")


def test_timeout_of_finds_a_bare_timeout_reason_and_checks_the_code() -> None:
    carrier = CancelController()
    carrier.cancel(TimeoutReason("X", 5))
    assert timeout_of(carrier.signal) is carrier.signal.reason
    assert timeout_of(carrier.signal, "X") is carrier.signal.reason
    assert timeout_of(carrier.signal, "Y") is None


@pytest.mark.parametrize("reason", [RuntimeError("X after 5ms"), "X after 5ms", None])
def test_timeout_of_ignores_reasons_that_are_not_timeout_reasons(reason: object) -> None:
    controller = CancelController()
    controller.cancel(reason)
    assert timeout_of(controller.signal) is None
    assert timeout_of(controller.signal, "X") is None


def test_timeout_of_an_uncancelled_signal_is_none() -> None:
    assert timeout_of(CancelController().signal) is None


@pytest.mark.anyio
async def test_nested_deadlines_keep_the_outer_timeout_distinct_from_the_inner_code() -> None:
    with anyio.fail_after(5):
        async with deadline(None, 30, "OUTER_TIMEOUT") as outer:
            async with deadline(outer, 4000, "INNER_TIMEOUT") as inner:
                await inner.wait()
    assert timeout_of(inner, "INNER_TIMEOUT") is None
    found = timeout_of(inner)
    assert found is not None and found.code == "OUTER_TIMEOUT"
