"""One-shot background subagent jobs, with the reference's job texts (``job_output`` / ``job_list`` / ``job_kill``).

A ``JobRunner`` owns its jobs: each runs in the runner's task group under its own ``CancelController``, and its
run is always disposed before the outcome is recorded (``settle_job_start``). Given ``RunSlots``, a job holds a slot
from before its start until its run was disposed; until one frees it is ``queued``, and a kill (or its timeout)
then settles it without starting a child (docs/behaviour.md#results-run-slots). A job is final-output only: a read
returns nothing while it runs and its full answer on every read once it settled. ``kill`` moves a live job to
``stopping`` until it settles. A job honours its entry's ``timeout_ms``: the deadline settles it ``failed`` with
the timeout text as its detail. ``aclose`` kills every live job and waits, shielded and bounded, until each one
settled, so no job outlives its owner. Finished jobs are evicted oldest first once more than ``max_finished_jobs``
of them, or more than ``max_finished_output_bytes`` of their texts, are kept; an evicted id reads like an unknown one.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

import anyio
from anyio.abc import TaskGroup

from host._exceptions import JobNotFoundError, SubagentHostError, describe_error
from host._json import format_ms
from host._text import utf8_size
from host.cancel import CancelController, CancelSignal, deadline, timeout_of
from host.config import DEFAULT_MAX_FINISHED_JOB_OUTPUT_BYTES, DEFAULT_MAX_FINISHED_JOBS
from host.diagnostics import JOB_KILL_REASON, JobOutcome, settle_job_start, status_line
from host.run._contracts import SubagentRun
from host.stream import EventFrame, FrameObserver, StreamFrame
from host.tools._slots import RunSlots

__all__ = [
    "BACKGROUND_JOBS_UNAVAILABLE",
    "JOBS_CLOSE_TIMEOUT_S",
    "JOB_KIND_SUBAGENT",
    "JOB_QUEUED_STATUS_LINE",
    "JOB_RUNNING_STATUS_LINE",
    "JOB_SESSION_LINE",
    "JOB_STOPPING_STATUS_LINE",
    "JOB_TIMEOUT_CODE",
    "NO_BACKGROUND_JOBS",
    "NO_NEW_OUTPUT",
    "JobDoneListener",
    "JobRunner",
    "JobStarter",
    "LiveJobStatus",
]

logger = logging.getLogger(__name__)

BACKGROUND_JOBS_UNAVAILABLE: Final = "background jobs unavailable"
"""Raised by a tool that needs a job runner when the host has none."""
JOB_KIND_SUBAGENT: Final = "subagent"
"""The kind of a delegation job, and the prefix of its id (``subagent-<n>``)."""
JOB_QUEUED_STATUS_LINE: Final = "[status: queued]"
"""The status line of a job waiting for a run slot (a deviation: the reference has no ``queued`` status)."""
JOB_RUNNING_STATUS_LINE: Final = "[status: running]"
"""The status line of a job that has not settled and was not killed."""
JOB_STOPPING_STATUS_LINE: Final = "[status: stopping]"
"""The status line of a killed job that has not settled yet."""
NO_NEW_OUTPUT: Final = "(no new output)"
"""The body of a read with nothing to show."""
NO_BACKGROUND_JOBS: Final = "(no background jobs)"
"""``job_list`` with no job."""
JOB_SESSION_LINE: Final = "[session: {session_id}]"
"""The line before a session job's status line in a read: the session to continue."""
JOB_TIMEOUT_CODE: Final = "TOOL_TIMEOUT"
"""The deadline code of a job's ``timeout_ms``."""
JOBS_CLOSE_TIMEOUT_S: Final = 30.0
"""Bounds how long ``JobRunner.aclose`` waits for killed jobs to settle (each run's ladder bounds it normally)."""

LiveJobStatus: TypeAlias = Literal["queued", "running", "stopping", "completed", "killed", "failed"]

_KILL_REQUESTED: Final = "requested cancellation of job {job_id}"
_ALREADY_FINISHED: Final = "job {job_id} had already finished {status_line}"
_UNKNOWN_JOB: Final = "unknown job {job_id}"
_EMPTY_JOB_ID: Final = 'invalid job_id: expected a non-empty string, got ""'
_INVALID_WAIT_TIMEOUT: Final = "invalid wait timeout: expected a positive number of milliseconds, got {value}"
_RUNNER_CLOSED: Final = "background jobs are closed"
_TIMED_OUT: Final = "tool call timed out after {ms}ms"
_COMPLETION_NOTICE: Final = (
    "background job {job_id} ({kind}: {label}) finished {status_line}. Read its output with job_output."
)

JobStarter = Callable[[CancelSignal, FrameObserver], Awaitable[SubagentRun]]
"""Starts a job's run: ``(job signal, frame observer) -> provider.start(...)`` with that signal and observer."""
JobDoneListener = Callable[[str, str], None]
"""Called with ``(job id, completion notice)`` when a job settles that no kill, read or wait reported."""


@dataclass(slots=True)
class _Job:
    """One background job: its controller, lifecycle status, outcome and whether its end was reported."""

    id: str
    label: str
    run_id: str | None = None
    session_id: str | None = None
    controller: CancelController = field(default_factory=CancelController)
    queued: bool = False
    """Waiting for a run slot: no child has been started."""
    stopping: bool = False
    outcome: JobOutcome | None = None
    reported: bool = False
    """A kill, a read or a wait has reported (or committed to report) the terminal state: no notice."""
    waiters: int = 0
    settled: anyio.Event = field(default_factory=anyio.Event)
    changes: dict[str, Any] | None = None
    """The data of the run's ``changes`` event (a worktree run that left changes)."""

    def observe(self, frame: StreamFrame) -> None:
        # A job is final-output only: its answer is read once it settled; only its changes are kept.
        if isinstance(frame, EventFrame) and frame.event.type == "changes":
            self.changes = dict(frame.event.data)

    @property
    def status(self) -> LiveJobStatus:
        if self.outcome is not None:
            return self.outcome.status
        if self.stopping:
            return "stopping"
        return "queued" if self.queued else "running"

    def status_line(self) -> str:
        if self.outcome is not None:
            return status_line(self.outcome)
        if self.stopping:
            return JOB_STOPPING_STATUS_LINE
        return JOB_QUEUED_STATUS_LINE if self.queued else JOB_RUNNING_STATUS_LINE


class JobRunner:
    """Runs one-shot background jobs in a task group the caller owns.

    Args:
        task_group: runs every job body; it must outlive ``aclose``.
        max_finished_jobs: how many finished jobs are kept; the oldest finished is evicted first.
        max_finished_output_bytes: how many UTF-8 bytes of finished jobs' texts (output and detail) are kept.
        slots: the host-wide run limit every job's run counts against (``None``: jobs are not limited).
    """

    def __init__(
        self,
        task_group: TaskGroup,
        *,
        max_finished_jobs: int = DEFAULT_MAX_FINISHED_JOBS,
        max_finished_output_bytes: int = DEFAULT_MAX_FINISHED_JOB_OUTPUT_BYTES,
        slots: RunSlots | None = None,
    ) -> None:
        self._task_group = task_group
        self._slots = slots
        self._jobs: dict[str, _Job] = {}
        self._max_finished_jobs = max_finished_jobs
        self._max_finished_output_bytes = max_finished_output_bytes
        self._finished: OrderedDict[str, int] = OrderedDict()
        """Finished job ids, oldest first, with the bytes each one's texts hold."""
        self._finished_bytes = 0
        self._numbers = itertools.count(1)
        self._listeners: dict[int, JobDoneListener] = {}
        self._listener_keys = itertools.count()
        self._closed = False

    def start(
        self,
        label: str,
        starter: JobStarter,
        *,
        timeout_ms: float | None = None,
        run_id: str | None = None,
        session_id: str | None = None,
    ) -> str:
        """Start a job whose run comes from ``starter``; return its id (``subagent-<n>``) at once.

        Args:
            label: the one-line label shown by ``job_list`` and the completion notice.
            starter: starts the run with the job's signal.
            timeout_ms: the job's budget; when it expires the job settles ``failed`` with the timeout text.
            run_id: the run id minted for the job's run, carried by its outcome.
            session_id: the session the job's run is a turn of (its outcome and reads carry it).

        Raises:
            SubagentHostError: the runner is closed.
        """
        if self._closed:
            raise SubagentHostError(_RUNNER_CLOSED)
        # A free slot is taken at once, so a job that need not wait is never listed queued.
        slot = self._slots.claim_nowait() if self._slots is not None else None
        job = _Job(
            id=f"{JOB_KIND_SUBAGENT}-{next(self._numbers)}",
            label=label,
            run_id=run_id,
            queued=self._slots is not None and slot is None,
            session_id=session_id,
        )
        self._jobs[job.id] = job
        self._task_group.start_soon(self._run_job, job, starter, timeout_ms, slot, name=f"subagent job {job.id}")
        return job.id

    def read(self, job_id: str) -> str:
        """``<body><newline unless the body ends in one><status line>``; the body is the settled answer or
        ``(no new output)``.

        Raises:
            SubagentHostError: an empty ``job_id``.
            JobNotFoundError: no job has that id.
        """
        return self._read_text(self._job(job_id))

    def _read_text(self, job: _Job) -> str:
        body = ""
        if job.outcome is not None:
            job.reported = True
            # Partial output of a failed or killed job is not reported.
            if job.outcome.status == "completed":
                body = job.outcome.output or ""
        if not body:
            body = NO_NEW_OUTPUT
        session = JOB_SESSION_LINE.format(session_id=job.session_id) + "\n" if job.session_id is not None else ""
        return body + ("" if body.endswith("\n") else "\n") + session + job.status_line()

    async def wait_read(self, job_id: str, timeout_ms: float) -> str:
        """Wait up to ``timeout_ms`` for the job to settle, then ``read`` it (a timed-out wait leaves it alive).

        Raises:
            SubagentHostError: an empty ``job_id`` or a non-positive ``timeout_ms``.
            JobNotFoundError: no job has that id.
        """
        job = self._job(job_id)
        if not timeout_ms > 0:
            raise SubagentHostError(_INVALID_WAIT_TIMEOUT.format(value=format_ms(timeout_ms)))
        if job.outcome is None:
            job.waiters += 1
            try:
                with anyio.move_on_after(timeout_ms / 1000):
                    await job.settled.wait()
            finally:
                job.waiters -= 1
        # Read the job itself: it may have been evicted since it settled.
        return self._read_text(job)

    def kill(self, job_id: str, reason: str | None = None) -> str:
        """Cancel a live job (reason ``background subagent task killed`` unless given); return the confirmation.

        Raises:
            SubagentHostError: an empty ``job_id``.
            JobNotFoundError: no job has that id.
        """
        job = self._job(job_id)
        job.reported = True
        if job.outcome is not None:
            return _ALREADY_FINISHED.format(job_id=job.id, status_line=job.status_line())
        job.controller.cancel(reason or JOB_KILL_REASON)
        job.stopping = True
        return _KILL_REQUESTED.format(job_id=job.id)

    def list_text(self) -> str:
        """One ``<id> [<kind>] <status> — <label>`` line per job (then `` [run: <run_id>]`` once the job's run has its
        id: its record under ``runs/``), or ``(no background jobs)``."""
        if not self._jobs:
            return NO_BACKGROUND_JOBS
        return "\n".join(
            f"{job.id} [{JOB_KIND_SUBAGENT}] {job.status} — {job.label}"
            + (f" [run: {job.run_id}]" if job.run_id else "")
            for job in self._jobs.values()
        )

    async def wait(self, job_id: str) -> JobOutcome:
        """Wait until the job settled (its run disposed) and return its outcome.

        Raises:
            JobNotFoundError: no job has that id.
        """
        job = self._job(job_id)
        await job.settled.wait()
        assert job.outcome is not None
        return job.outcome

    def on_job_done(self, listener: JobDoneListener) -> Callable[[], None]:
        """Call ``listener(job_id, notice)`` for every job that settles unreported; return its remover."""
        key = next(self._listener_keys)
        self._listeners[key] = listener

        def remove() -> None:
            self._listeners.pop(key, None)

        return remove

    def cancel_all(self) -> None:
        """Kill every live job now, without waiting (``aclose`` waits); no completion notice follows."""
        for job in self._jobs.values():
            if job.outcome is None:
                # Nobody is left to read a notice for a job torn down with its owner.
                job.reported = True
                job.stopping = True
                job.controller.cancel(JOB_KILL_REASON)

    async def aclose(self) -> None:
        """Kill every live job and wait until each settled, shielded and bounded. Later ``start`` calls raise."""
        self._closed = True
        live = [job for job in self._jobs.values() if job.outcome is None]
        self.cancel_all()
        with anyio.move_on_after(JOBS_CLOSE_TIMEOUT_S, shield=True) as scope:
            for job in live:
                await job.settled.wait()
        if scope.cancelled_caught:
            logger.warning("subagent-host: background jobs did not settle within %ss of closing", JOBS_CLOSE_TIMEOUT_S)

    def _job(self, job_id: str) -> _Job:
        if not job_id:
            raise SubagentHostError(_EMPTY_JOB_ID)
        job = self._jobs.get(job_id)
        if job is None:
            raise JobNotFoundError(_UNKNOWN_JOB.format(job_id=job_id))
        return job

    async def _run_job(self, job: _Job, starter: JobStarter, timeout_ms: float | None, slot: object | None) -> None:
        outcome: JobOutcome | None = None
        try:
            async with deadline(job.controller.signal, timeout_ms or 0, JOB_TIMEOUT_CODE) as signal:
                if self._slots is not None and slot is None:
                    slot = await self._slots.claim(signal)
                    job.queued = False
                # Killed (or timed out) while queued: settled without starting a child.
                if self._slots is None or slot is not None:
                    outcome = await settle_job_start(starter(signal, job.observe), signal)
            if timeout_ms is not None and timeout_of(signal, JOB_TIMEOUT_CODE) is not None:
                outcome = JobOutcome("failed", detail=_TIMED_OUT.format(ms=format_ms(timeout_ms)))
        except Exception as exc:  # containment boundary: a job body never takes the owner's task group down
            logger.exception("subagent-host: background job %s failed unexpectedly", job.id)
            outcome = JobOutcome("failed", detail=describe_error(exc))
        finally:
            if self._slots is not None and slot is not None:
                self._slots.release(slot)
            job.outcome = dataclasses.replace(
                outcome or JobOutcome("killed"), run_id=job.run_id, session_id=job.session_id
            )
            if job.changes is not None:
                job.outcome = dataclasses.replace(job.outcome, changes=job.changes)
            if job.waiters:
                job.reported = True
            job.settled.set()
            self._retain_finished(job)
        if not job.reported:
            self._announce(job)

    def _retain_finished(self, job: _Job) -> None:
        outcome = job.outcome
        assert outcome is not None
        # utf8_size: a child's lone surrogate must count, not raise (an exception here would end the host's group).
        size = utf8_size(outcome.output or "") + utf8_size(outcome.detail or "")
        self._finished[job.id] = size
        self._finished_bytes += size
        while self._finished and (
            len(self._finished) > self._max_finished_jobs or self._finished_bytes > self._max_finished_output_bytes
        ):
            oldest, oldest_size = self._finished.popitem(last=False)
            self._finished_bytes -= oldest_size
            del self._jobs[oldest]

    def _announce(self, job: _Job) -> None:
        notice = _COMPLETION_NOTICE.format(
            job_id=job.id, kind=JOB_KIND_SUBAGENT, label=job.label, status_line=job.status_line()
        )
        for listener in list(self._listeners.values()):
            try:
                listener(job.id, notice)
            except Exception:  # containment boundary: a listener never changes a settled job
                logger.exception("subagent-host: job completion listener failed for %s", job.id)
