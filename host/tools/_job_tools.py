"""The model-facing job tools over a ``JobRunner``: ``job_output``, ``job_list`` and ``job_kill``.

Their texts are the reference job tools': a read ends with ``[status: ...]``; ``wait`` blocks until the job
settles, up to ``timeout_ms`` (default 30 s, capped at 10 min), and a timed-out wait returns the running read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, TypeAdapter

from host._exceptions import SubagentHostError
from host._json import ContentBlock, JsonValue
from host.tools._define import define_tool
from host.tools._jobs import BACKGROUND_JOBS_UNAVAILABLE, JobRunner
from host.tools._types import ToolDefinition, ToolOutput, ToolRunContext

__all__ = [
    "JOB_KILL_TOOL_NAME",
    "JOB_LIST_TOOL_NAME",
    "JOB_OUTPUT_TOOL_NAME",
    "JOB_WAIT_DEFAULT_MS",
    "JOB_WAIT_MAX_MS",
    "create_job_tools",
]

JOB_OUTPUT_TOOL_NAME: Final = "job_output"
JOB_LIST_TOOL_NAME: Final = "job_list"
JOB_KILL_TOOL_NAME: Final = "job_kill"
JOB_WAIT_DEFAULT_MS: Final = 30_000
"""How long ``job_output`` with ``wait`` waits when ``timeout_ms`` is absent."""
JOB_WAIT_MAX_MS: Final = 600_000
"""The cap on any ``job_output`` wait; a larger ``timeout_ms`` is clamped to it."""

_JOB_ID_DESCRIPTION: Final = "Job id returned by the tool that started the background work."
_JOB_OUTPUT_DESCRIPTION: Final = (
    "Read a background job. Subagent jobs return their final answer once they settled, and (no new output) before. "
    "Every response ends with `[status: ...]`. Reads are non-blocking unless `wait: true`, which waits up to the "
    "configured cap."
)
_JOB_LIST_DESCRIPTION: Final = "List your background jobs (running and finished) with their ids, kinds, and statuses."
_JOB_KILL_DESCRIPTION: Final = (
    "Request cancellation of a running background job by job id. Returns immediately; the job settles as killed "
    "once its work actually stops."
)


class _JobOutputArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built by the first call or schema read

    job_id: Annotated[StrictStr, Field(description=_JOB_ID_DESCRIPTION)]
    wait: StrictBool = Field(
        default=False,
        description="Block until the job reaches a terminal status or the timeout expires. A timed-out wait "
        "returns [status: running] and leaves the job alive.",
    )
    timeout_ms: StrictInt | StrictFloat | None = Field(
        default=None,
        description="Max wait in milliseconds (only meaningful with wait: true). Defaults to 30000; capped at 600000.",
    )


class _JobListArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built by the first call or schema read


class _JobKillArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built by the first call or schema read

    job_id: Annotated[StrictStr, Field(description=_JOB_ID_DESCRIPTION)]
    reason: StrictStr | None = Field(
        default=None, description="Optional short reason, recorded in the log and forwarded to the job."
    )


def _render_text(_arguments: JsonValue, value: str) -> list[ContentBlock]:
    return [{"type": "text", "text": value}]


_TEXT_OUTPUT: Final = ToolOutput(TypeAdapter(str), _render_text)


def create_job_tools(jobs: Callable[[], JobRunner | None]) -> Mapping[str, ToolDefinition]:
    """Build ``job_output``, ``job_list`` and ``job_kill`` over the runner ``jobs()`` returns (read at call time).

    Raises (from the tools):
        JobNotFoundError: an unknown job id (``unknown job <id>``).
        SubagentHostError: an empty job id, a non-positive wait, or no job runner (``background jobs unavailable``).
    """

    def runner() -> JobRunner:
        current = jobs()
        if current is None:
            raise SubagentHostError(BACKGROUND_JOBS_UNAVAILABLE)
        return current

    async def job_output(args: _JobOutputArgs, _ctx: ToolRunContext) -> JsonValue:
        if not args.wait:
            return runner().read(args.job_id)
        timeout_ms = JOB_WAIT_DEFAULT_MS if args.timeout_ms is None else args.timeout_ms
        return await runner().wait_read(args.job_id, min(timeout_ms, JOB_WAIT_MAX_MS))

    async def job_list(_args: _JobListArgs, _ctx: ToolRunContext) -> JsonValue:
        return runner().list_text()

    async def job_kill(args: _JobKillArgs, _ctx: ToolRunContext) -> JsonValue:
        return runner().kill(args.job_id, args.reason)

    output, listing, kill = JOB_OUTPUT_TOOL_NAME, JOB_LIST_TOOL_NAME, JOB_KILL_TOOL_NAME
    return {
        output: define_tool(output, _JOB_OUTPUT_DESCRIPTION, _JobOutputArgs, _TEXT_OUTPUT, job_output),
        listing: define_tool(listing, _JOB_LIST_DESCRIPTION, _JobListArgs, _TEXT_OUTPUT, job_list),
        kill: define_tool(kill, _JOB_KILL_DESCRIPTION, _JobKillArgs, _TEXT_OUTPUT, job_kill),
    }
