"""Settlement of a published run's result, shared by both providers.

``settle_run_result`` never raises an ``Exception``: a local cancel settles ``aborted`` with no diagnostic and no
sink call, a raised attempt settles ``error`` (sink called once, contained), and a returned result is normalized
(``completed`` never carries a diagnostic; any other diagnostic is bounded). The cancel listener is always removed.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Literal, TypeAlias

from host._json import ContentBlock
from host.diagnostics._result import SubagentResult, limit_diagnostic

__all__ = ["ErrorSink", "call_error_sink", "normalize_result", "settle_run_result"]

logger = logging.getLogger(__name__)

ErrorSink: TypeAlias = Callable[[BaseException, Literal["error"]], None]
"""Receives each raw failure of a run, with the stop-reason argument always ``"error"``."""


def call_error_sink(sink: ErrorSink | None, error: BaseException) -> None:
    """Report ``error`` to ``sink``; a sink that raises is swallowed with a debug log and changes nothing."""
    if sink is None:
        return
    try:
        sink(error, "error")
    except Exception:  # containment boundary: a broken sink never changes a result or a raised error
        logger.debug("subagent-host: error sink raised", exc_info=True)


def normalize_result(result: SubagentResult) -> SubagentResult:
    """Strip the diagnostic of a ``completed`` result; bound any other diagnostic to 4096 bytes."""
    if result.stop_reason == "completed":
        if result.diagnostic is None:
            return result
        return result.model_copy(update={"diagnostic": None})
    if result.diagnostic is None:
        return result
    return result.model_copy(update={"diagnostic": limit_diagnostic(result.diagnostic)})


async def settle_run_result(
    attempt: Callable[[], Awaitable[SubagentResult]],
    *,
    collect_output: Callable[[], list[ContentBlock]],
    collect_diagnostic: Callable[[], str | None] | None = None,
    cancelled: Callable[[], bool],
    on_error: ErrorSink | None,
    remove_listener: Callable[[], None],
) -> SubagentResult:
    """Await ``attempt`` and turn its outcome into the run's published result.

    Args:
        attempt: produces the provider's own result, or raises a raw error.
        collect_output: the output snapshot taken when the outcome was fixed (partial output survives).
        collect_diagnostic: the safe diagnostic of a raised attempt, if the provider has one.
        cancelled: whether the run was cancelled locally; a local cancel wins over anything the child did.
        on_error: the error sink, called once with a raw error of an attempt that raised without a local cancel.
        remove_listener: removes the run's cancel listener; called on every path.

    Returns:
        The settled result. Only cancellation of the awaiting task itself propagates.
    """
    try:
        try:
            result = await attempt()
        except Exception as exc:
            if cancelled():
                return _aborted(collect_output())
            call_error_sink(on_error, exc)
            diagnostic = collect_diagnostic() if collect_diagnostic is not None else None
            return SubagentResult(
                output=collect_output(),
                stop_reason="error",
                diagnostic=limit_diagnostic(diagnostic) if diagnostic else None,
            )
        if cancelled():
            return _aborted(collect_output())
        return normalize_result(result)
    finally:
        _remove_listener_contained(remove_listener)


def _aborted(output: list[ContentBlock]) -> SubagentResult:
    return SubagentResult(output=output, stop_reason="aborted")


def _remove_listener_contained(remove_listener: Callable[[], None]) -> None:
    try:
        remove_listener()
    except Exception:  # containment boundary: settlement never raises because of its own bookkeeping
        logger.debug("subagent-host: removing the cancel listener raised", exc_info=True)
