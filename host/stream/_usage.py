"""Token usage and cost a child reports, validated into closed numbers (docs/behaviour.md#records-usage).

Three sources, read leniently: an ACP ``usage_update`` session update (``used``/``size``: the context in tokens,
``cost: {amount, currency}``: the cumulative session cost), the ``usage`` of an ACP ``session/prompt`` response
(``inputTokens``/``outputTokens`` of the turn) and the ``usage`` of a DSH SDK ``assistant/message``
(``inputTokens``/``outputTokens`` of the step, optionally ``cost: {amount, currency}`` of the step). A field is
kept only as a number the host checked: a token count is an ``int`` in ``[0, 2**53 - 1]`` (never a ``bool``, a
float or a string), a cost amount a finite number in ``[0, 1e9]`` with a currency of exactly three ASCII capital
letters (ISO 4217's shape). Anything else drops that field; a report with no valid field is no report. No string
the child chose survives except a currency that passed that shape.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Final, cast

from host._json import MAX_SAFE_INTEGER

__all__ = [
    "MAX_COST_AMOUNT",
    "RunUsage",
    "UsageCost",
    "UsageTotals",
    "acp_prompt_usage",
    "acp_usage_update",
    "sdk_message_usage",
]

MAX_COST_AMOUNT: Final = 1e9
"""The largest cost amount kept; a larger one is not a cost a run can have had."""
_CURRENCY: Final = re.compile(r"[A-Z]{3}")


@dataclass(frozen=True, slots=True)
class UsageCost:
    """A cost and its ISO 4217 currency code."""

    amount: float
    currency: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RunUsage:
    """Usage facts, every one checked; ``None`` where the child sent none (or none valid)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    context_tokens: int | None = None
    """Tokens in the child's context (ACP ``used``)."""
    context_size: int | None = None
    """The child's context window in tokens (ACP ``size``)."""
    cost: UsageCost | None = None

    def is_empty(self) -> bool:
        """Whether no field is set."""
        return self == _EMPTY

    def to_json(self) -> dict[str, Any]:
        """The set fields only: ``{input_tokens?, output_tokens?, context_tokens?, context_size?, cost?}``."""
        data: dict[str, Any] = {}
        for name in ("input_tokens", "output_tokens", "context_tokens", "context_size"):
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        if self.cost is not None:
            data["cost"] = {"amount": self.cost.amount, "currency": self.cost.currency}
        return data


_EMPTY: Final = RunUsage()


class UsageTotals:
    """One run's totals: token counts add up, ACP context and cumulative cost replace, a step cost adds."""

    def __init__(self) -> None:
        self._totals = _EMPTY
        self._mixed_currency = False

    @property
    def totals(self) -> RunUsage | None:
        """The totals so far, or ``None`` before any report."""
        return None if self._totals.is_empty() else self._totals

    def add(self, report: RunUsage, *, cumulative_cost: bool) -> None:
        """Fold one report in; ``cumulative_cost``: its cost is the session's total so far (ACP), not a step's."""
        totals = self._totals
        totals = replace(
            totals,
            input_tokens=_sum(totals.input_tokens, report.input_tokens),
            output_tokens=_sum(totals.output_tokens, report.output_tokens),
            context_tokens=report.context_tokens if report.context_tokens is not None else totals.context_tokens,
            context_size=report.context_size if report.context_size is not None else totals.context_size,
        )
        if report.cost is not None and not self._mixed_currency:
            if totals.cost is not None and totals.cost.currency != report.cost.currency:
                # Two currencies have no total: the run's cost is unknown from here on.
                self._mixed_currency = True
                totals = replace(totals, cost=None)
            elif cumulative_cost or totals.cost is None:
                totals = replace(totals, cost=report.cost)
            else:
                amount = totals.cost.amount + report.cost.amount
                totals = replace(
                    totals, cost=UsageCost(amount, report.cost.currency) if amount <= MAX_COST_AMOUNT else None
                )
        self._totals = totals


def acp_usage_update(update: Mapping[str, object]) -> RunUsage | None:
    """The checked facts of an ACP ``usage_update`` (``used``, ``size``, ``cost``), or ``None``."""
    return _report(
        context_tokens=_tokens(update.get("used")),
        context_size=_tokens(update.get("size")),
        cost=_cost(update.get("cost")),
    )


def acp_prompt_usage(response: object) -> RunUsage | None:
    """The checked ``usage`` of an ACP ``session/prompt`` response (``inputTokens``, ``outputTokens``), or ``None``."""
    usage = _object(_object(response).get("usage"))
    return _report(input_tokens=_tokens(usage.get("inputTokens")), output_tokens=_tokens(usage.get("outputTokens")))


def sdk_message_usage(data: object) -> RunUsage | None:
    """The checked ``usage`` of a DSH SDK ``assistant/message`` event's ``data``, or ``None``."""
    usage = _object(_object(data).get("usage"))
    if not usage:
        return None
    return _report(
        input_tokens=_tokens(usage.get("inputTokens")),
        output_tokens=_tokens(usage.get("outputTokens")),
        cost=_cost(usage.get("cost")),
    )


def _report(**fields: Any) -> RunUsage | None:
    report = RunUsage(**fields)
    return None if report.is_empty() else report


def _object(value: object) -> Mapping[str, object]:
    return cast("Mapping[str, object]", value) if isinstance(value, Mapping) else {}


def _tokens(value: object) -> int | None:
    if type(value) is int and 0 <= value <= MAX_SAFE_INTEGER:
        return value
    return None


def _cost(value: object) -> UsageCost | None:
    cost = _object(value)
    amount, currency = cost.get("amount"), cost.get("currency")
    if type(amount) not in (int, float) or type(currency) is not str:
        return None
    number = float(cast("int | float", amount))
    if not (math.isfinite(number) and 0 <= number <= MAX_COST_AMOUNT) or not _CURRENCY.fullmatch(currency):
        return None
    return UsageCost(number, currency)


def _sum(total: int | None, value: int | None) -> int | None:
    if value is None:
        return total
    summed = value if total is None else total + value
    # A sum past the safe range is no longer a count anyone can trust: keep the last trustworthy total.
    return summed if summed <= MAX_SAFE_INTEGER else total
