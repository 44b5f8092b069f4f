"""Usage reports are checked numbers only, and a run's totals add tokens, replace ACP's cumulative cost and
context, add step costs, and forget the cost once two currencies meet (pure logic, no child)."""

from __future__ import annotations

import pytest

from host._json import MAX_SAFE_INTEGER
from host.stream import RunUsage, UsageCost, acp_prompt_usage, acp_usage_update, sdk_message_usage
from host.stream._usage import UsageTotals


@pytest.mark.parametrize(
    "value",
    ["12", -1, 1.5, True, None, MAX_SAFE_INTEGER + 1, 10**30, float("nan"), float("inf"), [1], {"n": 1}],
)
def test_a_token_count_is_a_safe_non_negative_int_only(value: object) -> None:
    assert acp_usage_update({"used": value, "size": value}) is None
    assert acp_prompt_usage({"usage": {"inputTokens": value, "outputTokens": value}}) is None
    assert sdk_message_usage({"usage": {"inputTokens": value, "outputTokens": value}}) is None


@pytest.mark.parametrize(
    "cost",
    [
        {"amount": "0.5", "currency": "USD"},
        {"amount": -0.01, "currency": "USD"},
        {"amount": float("nan"), "currency": "USD"},
        {"amount": float("inf"), "currency": "USD"},
        {"amount": 1e10, "currency": "USD"},
        {"amount": True, "currency": "USD"},
        {"amount": 0.5, "currency": "usd"},
        {"amount": 0.5, "currency": "US"},
        {"amount": 0.5, "currency": "USDT"},
        {"amount": 0.5, "currency": "\x1b[1m"},
        {"amount": 0.5},
        "0.5 USD",
    ],
)
def test_a_cost_is_a_bounded_finite_amount_with_an_iso_shaped_currency(cost: object) -> None:
    assert acp_usage_update({"cost": cost}) is None
    assert sdk_message_usage({"usage": {"cost": cost}}) is None


def test_a_bad_field_drops_only_itself() -> None:
    assert acp_usage_update({"used": "x", "size": 7, "cost": {"amount": 1, "currency": "JPY"}}) == RunUsage(
        context_size=7, cost=UsageCost(1.0, "JPY")
    )


def test_totals_add_tokens_and_step_costs_and_replace_cumulative_ones() -> None:
    totals = UsageTotals()
    assert totals.totals is None
    totals.add(RunUsage(input_tokens=1, cost=UsageCost(0.5, "USD")), cumulative_cost=False)
    totals.add(RunUsage(input_tokens=2, output_tokens=3, cost=UsageCost(0.25, "USD")), cumulative_cost=False)
    assert totals.totals == RunUsage(input_tokens=3, output_tokens=3, cost=UsageCost(0.75, "USD"))
    totals.add(RunUsage(context_tokens=9, context_size=10, cost=UsageCost(2.0, "USD")), cumulative_cost=True)
    assert totals.totals == RunUsage(
        input_tokens=3, output_tokens=3, context_tokens=9, context_size=10, cost=UsageCost(2.0, "USD")
    )


def test_two_currencies_leave_the_cost_unknown_for_good() -> None:
    totals = UsageTotals()
    totals.add(RunUsage(cost=UsageCost(1.0, "USD")), cumulative_cost=False)
    totals.add(RunUsage(cost=UsageCost(1.0, "EUR")), cumulative_cost=False)
    totals.add(RunUsage(cost=UsageCost(1.0, "USD")), cumulative_cost=False)
    assert totals.totals is None


def test_a_sum_past_the_safe_range_keeps_the_last_trustworthy_total() -> None:
    totals = UsageTotals()
    totals.add(RunUsage(input_tokens=MAX_SAFE_INTEGER), cumulative_cost=False)
    totals.add(RunUsage(input_tokens=1, output_tokens=1), cumulative_cost=False)
    assert totals.totals == RunUsage(input_tokens=MAX_SAFE_INTEGER, output_tokens=1)
