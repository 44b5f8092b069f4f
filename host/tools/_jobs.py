"""One-shot background subagent jobs and the ``job_output`` / ``job_kill`` tools.

A ``JobRunner`` owns its jobs: each runs in the runner's task group under its own ``CancelController``, and its
run is always disposed before the outcome is recorded (``settle_job_start``). ``aclose`` kills every live job
through its controller and waits, shielded and bounded, until each one settled, so no job outlives its owner.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Final

import anyio
from anyio.abc import TaskGroup
from pydantic import BaseModel, ConfigDict, Field, StrictStr, TypeAdapter

from host._contracts import SubagentRun
from host._exceptions import JobNotFoundError, SubagentHostError, describe_error
from host._json import ContentBlock, JsonValue
from host.cancel import CancelController, CancelSignal
from host.diagnostics import JOB_KILL_REASON, JobOutcome, settle_job_start, status_line
from host.stream import ChunkFrame, FrameObserver, StreamFrame, TextDelta
from host.tools._define import define_tool
from host.tools._types import ToolDefinition, ToolOutput, ToolRunContext

__all__ = [
    "BACKGROUND_JOBS_UNAVAILABLE",
    "JOB_KILL_TOOL_NAME",
    "JOB_OUTPUT_TOOL_NAME",
    "JOB_RUNNING_STATUS_LINE",
    "JOBS_CLOSE_TIMEOUT_S",
    "JobRunner",
    "JobStarter",
    "create_job_tools",
]

logger = logging.getLogger(__name__)

BACKGROUND_JOBS_UNAVAILABLE: Final = "background jobs unavailable"
"""Raised by a tool that needs a job runner when the host has none."""
JOB_OUTPUT_TOOL_NAME: Final = "job_output"
JOB_KILL_TOOL_NAME: Final = "job_kill"
JOB_RUNNING_STATUS_LINE: Final = "[status: running]"
"""The status line of a job that has not settled yet."""
JOBS_CLOSE_TIMEOUT_S: Final = 30.0
"""Bounds how long ``JobRunner.aclose`` waits for killed jobs to settle (each run's ladder bounds it normally)."""

_KILL_REQUESTED: Final = "requested cancellation of job {job_id}"
_UNKNOWN_JOB: Final = 'unknown background job "{job_id}"'
_RUNNER_CLOSED: Final = "background jobs are closed"
_JOB_OUTPUT_DESCRIPTION: Final = (
    "Return a background subagent job's new output (text not returned by an earlier job_output call) followed by "
    "its status line: [status: running], [status: completed], [status: killed] or [status: failed, <detail>]."
)
_JOB_KILL_DESCRIPTION: Final = "Request cancellation of a running background subagent job."

JobStarter = Callable[[CancelSignal, FrameObserver], Awaitable[SubagentRun]]
"""Starts a job's run: ``(job signal, frame observer) -> provider.start(...)`` with that signal and observer."""


@dataclass(slots=True)
class _Job:
    """One background job: its controller, streamed text, what ``job_output`` already returned, and its outcome."""

    id: str
    label: str
    controller: CancelController = field(default_factory=CancelController)
    streamed: list[str] = field(default_factory=list[str])
    returned: str = ""
    """The output text already handed out by ``job_output``."""
    outcome: JobOutcome | None = None
    settled: anyio.Event = field(default_factory=anyio.Event)

    def on_frame(self, frame: StreamFrame) -> None:
        # Only live text deltas count: they are what a running job has said so far.
        if isinstance(frame, ChunkFrame) and isinstance(frame.chunk, TextDelta):
            self.streamed.append(frame.chunk.text)

    def take_new_output(self) -> str:
        """The text not yet returned: streamed deltas while running, the final output once completed."""
        if self.outcome is None:
            available = "".join(self.streamed)
        elif self.outcome.status == "completed":
            available = self.outcome.output or ""
        else:
            # Partial output of a failed or killed job is not reported.
            return ""
        if available.startswith(self.returned):
            new = available[len(self.returned) :]
        else:
            # The final answer diverged from what streamed (a rewritten block): hand it out whole.
            new = available
        self.returned = available
        return new


class JobRunner:
    """Runs one-shot background jobs in a task group the caller owns.

    Args:
        task_group: runs every job body; it must outlive ``aclose``.
    """

    def __init__(self, task_group: TaskGroup) -> None:
        self._task_group = task_group
        self._jobs: dict[str, _Job] = {}
        self._next_number = 1
        self._closed = False

    def start(self, label: str, starter: JobStarter) -> str:
        """Start a job whose run comes from ``starter``; return its id at once.

        Raises:
            SubagentHostError: the runner is closed.
        """
        if self._closed:
            raise SubagentHostError(_RUNNER_CLOSED)
        job = _Job(id=f"job-{self._next_number}", label=label)
        self._next_number += 1
        self._jobs[job.id] = job
        self._task_group.start_soon(self._run_job, job, starter, name=f"subagent job {job.id}")
        return job.id

    def output(self, job_id: str) -> str:
        """Return the job's new output followed by its status line (``<output>\\n<status>``, or just the status).

        Raises:
            JobNotFoundError: no job has that id.
        """
        job = self._job(job_id)
        new = job.take_new_output()
        line = JOB_RUNNING_STATUS_LINE if job.outcome is None else status_line(job.outcome)
        return new + "\n" + line if new else line

    def kill(self, job_id: str, reason: object = None) -> str:
        """Cancel the job (reason ``background subagent task killed`` unless given); return the confirmation text.

        Raises:
            JobNotFoundError: no job has that id.
        """
        job = self._job(job_id)
        job.controller.cancel(reason or JOB_KILL_REASON)
        return _KILL_REQUESTED.format(job_id=job_id)

    def outcome(self, job_id: str) -> JobOutcome | None:
        """The job's outcome, or ``None`` while it is still running.

        Raises:
            JobNotFoundError: no job has that id.
        """
        return self._job(job_id).outcome

    async def wait(self, job_id: str) -> JobOutcome:
        """Wait until the job settled (its run disposed) and return its outcome.

        Raises:
            JobNotFoundError: no job has that id.
        """
        job = self._job(job_id)
        await job.settled.wait()
        assert job.outcome is not None
        return job.outcome

    async def aclose(self) -> None:
        """Kill every live job and wait until each settled, shielded and bounded. Later ``start`` calls raise."""
        self._closed = True
        live = [job for job in self._jobs.values() if job.outcome is None]
        for job in live:
            job.controller.cancel(JOB_KILL_REASON)
        with anyio.move_on_after(JOBS_CLOSE_TIMEOUT_S, shield=True) as scope:
            for job in live:
                await job.settled.wait()
        if scope.cancelled_caught:
            logger.warning("subagent-host: background jobs did not settle within %ss of closing", JOBS_CLOSE_TIMEOUT_S)

    def _job(self, job_id: str) -> _Job:
        job = self._jobs.get(job_id)
        if job is None:
            raise JobNotFoundError(_UNKNOWN_JOB.format(job_id=job_id))
        return job

    async def _run_job(self, job: _Job, starter: JobStarter) -> None:
        try:
            job.outcome = await settle_job_start(_start(starter, job), job.controller.signal)
        except Exception as exc:  # containment boundary: a job body never takes the owner's task group down
            logger.exception("subagent-host: background job %s failed unexpectedly", job.id)
            job.outcome = JobOutcome("failed", detail=describe_error(exc))
        finally:
            if job.outcome is None:
                job.outcome = JobOutcome("killed")
            job.settled.set()


async def _start(starter: JobStarter, job: _Job) -> SubagentRun:
    return await starter(job.controller.signal, job.on_frame)


class _JobIdArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    job_id: Annotated[StrictStr, Field(min_length=1, description="The id returned when the job was started.")]


def _render_text(_arguments: JsonValue, value: str) -> list[ContentBlock]:
    return [{"type": "text", "text": value}]


_TEXT_OUTPUT: Final = ToolOutput(TypeAdapter(str), _render_text)


def create_job_tools(jobs: Callable[[], JobRunner | None]) -> Mapping[str, ToolDefinition]:
    """Build ``job_output`` and ``job_kill`` over the runner ``jobs()`` returns (read at call time).

    Raises (from the tools):
        JobNotFoundError: an unknown job id.
        SubagentHostError: no job runner (``background jobs unavailable``).
    """

    def runner() -> JobRunner:
        current = jobs()
        if current is None:
            raise SubagentHostError(BACKGROUND_JOBS_UNAVAILABLE)
        return current

    async def job_output(args: _JobIdArgs, _ctx: ToolRunContext) -> JsonValue:
        return runner().output(args.job_id)

    async def job_kill(args: _JobIdArgs, _ctx: ToolRunContext) -> JsonValue:
        return runner().kill(args.job_id)

    return {
        JOB_OUTPUT_TOOL_NAME: define_tool(
            JOB_OUTPUT_TOOL_NAME, _JOB_OUTPUT_DESCRIPTION, _JobIdArgs, _TEXT_OUTPUT, job_output
        ),
        JOB_KILL_TOOL_NAME: define_tool(JOB_KILL_TOOL_NAME, _JOB_KILL_DESCRIPTION, _JobIdArgs, _TEXT_OUTPUT, job_kill),
    }
