"""The background branch of a delegation call: start a one-shot job and return its start value at once.

``start_background`` mints the run id up front, so the returned value names the run its record will be filed under;
the job's body builds the run's request from the call's (the job's own signal, the job and run ids, frames teed to
the job and to the call's observer) and starts it through ``start_run`` (``provider.start``, or a session turn). A
job honours the entry's ``timeout_ms`` too. Without a job runner it raises ``background jobs unavailable`` and starts
nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from host._exceptions import SubagentHostError
from host._json import JsonValue
from host.cancel import CancelSignal
from host.run._contracts import SubagentRequest, SubagentRun
from host.run._lifecycle import new_run_id
from host.stream import FrameObserver, StreamFrame
from host.tools._jobs import BACKGROUND_JOBS_UNAVAILABLE, JobRunner

__all__ = ["start_background"]


def start_background(
    start_run: Callable[[SubagentRequest], Awaitable[SubagentRun]],
    request: SubagentRequest,
    jobs: JobRunner | None,
    timeout_ms: float | None,
    session_id: str | None,
) -> JsonValue:
    """Start the job; return ``{"kind": "background", "job_id", "run_id"}`` (plus ``session_id`` for a session turn).

    Raises:
        SubagentHostError: ``jobs`` is ``None`` (background jobs unavailable).
    """
    if jobs is None:
        raise SubagentHostError(BACKGROUND_JOBS_UNAVAILABLE)

    # Minted up front, so the start result names the run its record will be filed under.
    run_id = new_run_id()
    job_ids: list[str] = []

    async def start(signal: CancelSignal, on_frame: FrameObserver) -> SubagentRun:
        def observe(frame: StreamFrame) -> None:
            on_frame(frame)
            if request.on_frame is not None:
                request.on_frame(frame)

        job_request = SubagentRequest(
            label=request.label,
            prompt=request.prompt,
            signal=signal,
            parent_cwd=request.parent_cwd,
            agent_options=request.agent_options,
            on_frame=observe,
            workspace=request.workspace,
            traceparent=request.traceparent,
            run_id=run_id,
            job_id=job_ids[0],  # the job's body runs after `jobs.start` returned its id
        )
        return await start_run(job_request)

    # A job honours the entry's budget too: it settles failed with the timeout text (a deliberate deviation).
    job_id = jobs.start(request.label, start, timeout_ms=timeout_ms, run_id=run_id, session_id=session_id)
    job_ids.append(job_id)
    if session_id is None:
        return {"kind": "background", "job_id": job_id, "run_id": run_id}
    return {"kind": "background", "job_id": job_id, "run_id": run_id, "session_id": session_id}
