"""An ACP run's failure classification: startup, prompt and teardown failures into closed ``AcpFailureFacts``.

Each function reads only host-side facts (the stage, the JSON-RPC error's code, the child's exit outcome) and
returns a safe ``AcpRunFailure`` or facts; a raw error goes to the error sink and ``__cause__`` only, never into a
message. An exit observation waits at most the run's dispose grace
(docs/behaviour.md#acp-startup, docs/behaviour.md#acp-teardown-failure).
"""

from __future__ import annotations

import math

import anyio

from host._exceptions import AcpRunFailure, LineTooLongError
from host.acp_provider._spec import StartupFailure, exit_facts, is_auth_required
from host.diagnostics import AcpFailureFacts, AcpStage, acp_run_failure
from host.process import ProcessHandle, ProcessOutcome
from host.run._lifecycle import ErrorSink, call_error_sink

__all__ = [
    "classify_prompt_failure",
    "handshake_failure",
    "observe_outcome",
    "release_failure",
    "startup_run_failure",
]


def handshake_failure(stage: AcpStage, raw: BaseException) -> StartupFailure:
    """A failed handshake request: ``auth-required`` facts when the error says so, else facts left to the exit."""
    return StartupFailure(stage, raw, AcpFailureFacts(stage, "auth-required") if is_auth_required(raw) else None)


async def observe_outcome(handle: ProcessHandle, grace_ms: float) -> ProcessOutcome | None:
    """The child's exit outcome: already observed, or awaited for at most ``grace_ms``; ``None`` if still alive."""
    outcome = handle.outcome
    if outcome is None:
        with anyio.move_on_after(math.ceil(grace_ms) / 1000):
            outcome = await handle.wait_outcome()
    return outcome


async def startup_run_failure(
    failure: StartupFailure, handle: ProcessHandle, grace_ms: float, on_error: ErrorSink | None
) -> AcpRunFailure:
    """The safe error for a startup failure: its own facts, else the exit (shielded wait), else ``transport``."""
    facts = failure.facts
    if facts is None:
        outcome: ProcessOutcome | None = None
        with anyio.CancelScope(shield=True):
            outcome = await observe_outcome(handle, grace_ms)
        facts = (
            exit_facts(failure.stage, outcome) if outcome is not None else AcpFailureFacts(failure.stage, "transport")
        )
    call_error_sink(on_error, failure.raw)
    return acp_run_failure(facts, failure.raw)


async def classify_prompt_failure(raw: BaseException, handle: ProcessHandle, grace_ms: float) -> AcpFailureFacts:
    """A failed ``session/prompt``: ``auth-required``, else the child's exit (``process``), else ``transport``.

    The exit wait is not shielded: it runs inside the attempt's scope, so a local cancel interrupts it.
    """
    if is_auth_required(raw):
        return AcpFailureFacts("prompt", "auth-required")
    if _caused_by_oversized_line(raw):
        # The host closed the connection on a line past the bound: a transport failure, whatever the child does
        # after (it may exit on the closed pipe before the exit is observed).
        return AcpFailureFacts("prompt", "transport")
    outcome = await observe_outcome(handle, grace_ms)
    return exit_facts("process", outcome) if outcome is not None else AcpFailureFacts("prompt", "transport")


def _caused_by_oversized_line(raw: BaseException) -> bool:
    seen: set[int] = set()
    cause: BaseException | None = raw
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, LineTooLongError):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def release_failure(raw: Exception, handle: ProcessHandle, on_error: ErrorSink | None) -> AcpRunFailure:
    """Report a ladder failure to the sink and build its safe form: the exit facts, else ``teardown``/``unknown``."""
    call_error_sink(on_error, raw)
    outcome = handle.outcome
    facts = exit_facts("teardown", outcome) if outcome is not None else AcpFailureFacts("teardown", "unknown")
    return acp_run_failure(facts, raw)
