"""The foreground delegation tool's texts and its settle-then-dispose rule.

``settle_foreground_run`` always disposes the run, then raises the result's failure, the dispose failure, or an
``AggregateError`` of both, in that precedence; otherwise it returns the tool value. Headlines are exact.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final

import anyio

from host._exceptions import AggregateError, SubagentRunError, describe_error
from host._json import ContentBlock
from host.diagnostics._handle import SettleableRun
from host.diagnostics._result import SubagentResult

__all__ = ["DISPOSE_ON_CANCEL_TIMEOUT_S", "foreground_failure_message", "settle_foreground_run", "text_of"]

logger = logging.getLogger(__name__)

DISPOSE_ON_CANCEL_TIMEOUT_S: Final = 30.0
"""Bounds the shielded dispose when the awaiting task itself is cancelled (the ladder bounds it normally)."""

_HEADLINES: Final[dict[str, str]] = {
    "aborted": "subagent run was cancelled",
    "error": "subagent run failed",
    "max-tokens": "subagent run hit its token limit before finishing",
    "refusal": "subagent declined the task",
}
_ABNORMAL_HEADLINE: Final = "subagent run ended abnormally ({stop_reason})"
_DIAGNOSTIC_SECTION: Final = "\nDiagnostic: "
_PARTIAL_SECTION: Final = "\nPartial output before the run ended:\n"
_AGGREGATE_MESSAGE: Final = "subagent run failed: {result}; dispose failed: {dispose}"


def text_of(blocks: Sequence[ContentBlock]) -> str:
    """Concatenate the text of every ``text`` block, with no separator; other blocks are skipped."""
    parts: list[str] = []
    for block in blocks:
        text = block.get("text")
        if block.get("type") == "text" and isinstance(text, str):
            parts.append(text)
    return "".join(parts)


def foreground_failure_message(result: SubagentResult) -> str:
    """Return the text of a non-completed run: headline, then the diagnostic and the partial output if any."""
    message = _HEADLINES.get(result.stop_reason) or _ABNORMAL_HEADLINE.format(stop_reason=result.stop_reason)
    if result.diagnostic:
        message += _DIAGNOSTIC_SECTION + result.diagnostic
    partial = text_of(result.output)
    if partial:
        message += _PARTIAL_SECTION + partial
    return message


async def settle_foreground_run(run: SettleableRun) -> dict[str, Any]:
    """Await the run's result, always dispose it, and return the foreground tool value.

    Returns:
        ``{"kind": "foreground", "run_id": run.id, "output": result.output}`` for a ``completed`` run.

    Raises:
        SubagentRunError: the run did not complete (message per ``foreground_failure_message``).
        AggregateError: the run did not complete and dispose failed too.
        Exception: whatever ``dispose()`` raised, when only disposal failed.
    """
    result: SubagentResult | None = None
    result_error: Exception | None = None
    try:
        result = await run.result()
    except Exception as exc:  # result() must never raise; an infrastructure fault still gets the dispose
        result_error = exc
    except BaseException:
        await _dispose_on_cancel(run)
        raise
    if result is not None and result.stop_reason != "completed":
        result_error = SubagentRunError(foreground_failure_message(result))

    dispose_error: Exception | None = None
    try:
        await run.dispose()
    except Exception as exc:
        dispose_error = exc

    if result_error is not None and dispose_error is not None:
        message = _AGGREGATE_MESSAGE.format(result=describe_error(result_error), dispose=describe_error(dispose_error))
        raise AggregateError([result_error, dispose_error], message)
    if result_error is not None:
        raise result_error
    if dispose_error is not None:
        raise dispose_error
    assert result is not None
    return {"kind": "foreground", "run_id": run.id, "output": result.output}


async def _dispose_on_cancel(run: SettleableRun) -> None:
    with anyio.move_on_after(DISPOSE_ON_CANCEL_TIMEOUT_S, shield=True) as scope:
        try:
            await run.dispose()
        except Exception:
            logger.warning("subagent-host: dispose of run %s failed after cancellation", run.id, exc_info=True)
    if scope.cancelled_caught:
        logger.warning("subagent-host: dispose of run %s did not finish after cancellation", run.id)
