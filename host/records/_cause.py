"""The closed ``cause`` of a run's end, for the operator: why it ended, in one word.

``completed``; ``cancelled`` (a local cancel: Ctrl-C, a kill, the host closing); ``timeout`` (a deadline expired:
the entry's ``timeout_ms``, or the handshake's ``initialize_timeout_ms``); ``permission-denied`` (the policy denied
what the child asked for, and the run did not complete); ``child-stopped`` (the child ended the turn itself:
refusal, max-tokens, a remote cancel); ``failed`` (anything else: a crash, a protocol or transport failure).
Built only from closed facts: the stop reason, the closed diagnostic line and the run's own cancel signal.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias

from host._exceptions import AggregateError, RunFailure, StartAbortedError
from host.cancel import CancelSignal, timeout_of

__all__ = ["RUN_CAUSES", "RunCause", "end_of_failed_start", "run_cause"]

RunCause: TypeAlias = Literal["completed", "cancelled", "timeout", "permission-denied", "child-stopped", "failed"]
RUN_CAUSES: Final[tuple[RunCause, ...]] = (
    "completed",
    "cancelled",
    "timeout",
    "permission-denied",
    "child-stopped",
    "failed",
)

_FAILURE_LINE_START: Final = "Subagent failure ("


def run_cause(stop_reason: str, diagnostic: str | None, signal: CancelSignal | None) -> RunCause:
    """The cause of an end with ``stop_reason`` and ``diagnostic``, given the run's own cancel ``signal``."""
    if stop_reason == "completed":
        return "completed"
    text = diagnostic or ""
    if "decision: denied" in text:
        return "permission-denied"
    if stop_reason == "aborted" and signal is not None and signal.cancelled:
        return "timeout" if timeout_of(signal) is not None else "cancelled"
    if "category: timeout" in text:
        return "timeout"
    if stop_reason in ("refusal", "max-tokens", "aborted"):
        return "child-stopped"
    return "failed"


def end_of_failed_start(error: BaseException) -> dict[str, Any]:
    """The ``run/end`` data (``{stop_reason, diagnostic?}``) of a start that raised ``error``."""
    if isinstance(error, StartAbortedError) or not isinstance(error, Exception):
        return {"stop_reason": "aborted"}
    failures = list(error.errors) if isinstance(error, AggregateError) else [error]
    for failure in failures:
        if isinstance(failure, RunFailure):
            message = str(failure)
            at = message.find(_FAILURE_LINE_START)
            if at >= 0:
                return {"stop_reason": "error", "diagnostic": message[at:]}
        if isinstance(failure, StartAbortedError):
            return {"stop_reason": "aborted"}
    return {"stop_reason": "error"}
