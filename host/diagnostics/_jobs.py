"""The one-shot background job mapping: result → ``JobOutcome``, dispose before report, and the status line.

``settle_job_run`` always disposes the run before the outcome is reported; ``settle_job_start`` treats only a
non-aggregate start failure after cancellation as a clean kill. Neither raises for a run or start failure.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias

from host._exceptions import AggregateError, describe_error
from host.diagnostics._foreground import text_of
from host.diagnostics._handle import CancelFlag, SettleableRun
from host.diagnostics._result import SubagentResult

__all__ = [
    "JOB_KILL_REASON",
    "JobOutcome",
    "JobStatus",
    "job_outcome_of",
    "settle_job_run",
    "settle_job_start",
    "status_line",
]

JobStatus: TypeAlias = Literal["completed", "failed", "killed"]

JOB_KILL_REASON: Final = "background subagent task killed"
"""The cancel reason of a job killed without one of its own."""

_DIAGNOSTIC_DETAIL: Final = "{stop_reason}; diagnostic: {diagnostic}"
_DISPOSE_FAILED: Final = "dispose failed: "


@dataclass(frozen=True, slots=True)
class JobOutcome:
    """How a one-shot background job ended."""

    status: JobStatus
    output: str | None = None
    """The text blocks of a completed run's output, joined with no separator."""
    detail: str | None = None
    """Why a job failed: a stop reason, a diagnostic, or a described error."""
    changes: Mapping[str, Any] | None = None
    """A worktree job's changes, as a foreground result's ``changes`` (``{branch, base, files, insertions,
    deletions}``; also when the job failed, since its branch and patch are kept)."""
    run_id: str | None = None
    """The job's run id (its record under ``runs/``), when the job was given one; host-side, not in any text."""
    session_id: str | None = None
    """The session the job's run was a turn of (continue it with ``session_id``)."""


def job_outcome_of(result: SubagentResult) -> JobOutcome:
    """Map a settled result onto a job outcome; partial output of a failed job is not reported."""
    if result.stop_reason == "completed":
        return JobOutcome("completed", output=text_of(result.output))
    if result.stop_reason == "aborted" and not result.diagnostic:
        return JobOutcome("killed")
    if result.diagnostic:
        # A remote abort that explains itself is a failure, not a local kill.
        return JobOutcome(
            "failed", detail=_DIAGNOSTIC_DETAIL.format(stop_reason=result.stop_reason, diagnostic=result.diagnostic)
        )
    return JobOutcome("failed", detail=result.stop_reason)


async def settle_job_run(run: SettleableRun) -> JobOutcome:
    """Map the run's result, dispose the run, then return the outcome (dispose always happens first)."""
    try:
        outcome = job_outcome_of(await run.result())
    except Exception as exc:  # result() must never raise; an infrastructure fault is a failed job
        outcome = JobOutcome("failed", detail=describe_error(exc))
    try:
        await run.dispose()
    except Exception as exc:
        prior = outcome.detail + "; " if outcome.detail else ""
        outcome = JobOutcome("failed", detail=prior + _DISPOSE_FAILED + describe_error(exc))
    return outcome


async def settle_job_start(start: Awaitable[SettleableRun], signal: CancelFlag) -> JobOutcome:
    """Await a job's ``provider.start``, then settle the run; a failed start becomes ``killed`` or ``failed``.

    A start that raised after the job's signal was cancelled is ``killed``, unless it raised an ``AggregateError``
    (a failed rollback): quiescence was not proven, so it stays ``failed``.
    """
    try:
        run = await start
    except Exception as exc:
        if signal.cancelled and not isinstance(exc, AggregateError):
            outcome = JobOutcome("killed")
        else:
            outcome = JobOutcome("failed", detail=describe_error(exc))
        return outcome
    return await settle_job_run(run)


def status_line(outcome: JobOutcome) -> str:
    """Return ``[status: <status>]``, or ``[status: <status>, <detail>]`` when there is a detail."""
    if outcome.detail:
        return f"[status: {outcome.status}, {outcome.detail}]"
    return f"[status: {outcome.status}]"
