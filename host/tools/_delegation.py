"""The delegation tool of one provider entry: ``delegate_<name>``, foreground or as a one-shot background job.

Foreground, the call's ``ctx.signal`` is the run's cancel signal and the run is **always** disposed before the tool
returns (``settle_foreground_run``); a non-completed run raises the spec's exact text. Background, the tool starts a
job under its own controller and returns at once. The capability gate runs before ``provider.start`` either way.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Annotated, Any, Final, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, TypeAdapter

from host._exceptions import AggregateError, SubagentRunError, describe_error
from host._json import ContentBlock, JsonValue
from host.config import EntryConfig, delegation_tool_name
from host.diagnostics import SettleableRun, SubagentResult, foreground_failure_message, text_of
from host.run._contracts import Provider, SubagentRequest, SubagentRun, check_capabilities
from host.run._spawned import observe_spawns
from host.sessions import SessionTable
from host.stream import EventFrame, FrameObserver, RunUsage, StreamFrame, usage_of_transcript
from host.telemetry._config import valid_traceparent
from host.tools._background_start import start_background
from host.tools._define import define_tool
from host.tools._jobs import JobRunner
from host.tools._session_turns import CONTEXT_RESET_TEXT, SessionArgs, SessionTurn, open_session_turn, session_text
from host.tools._slots import RunSlots
from host.tools._types import ToolDefinition, ToolOutput, ToolRunContext
from host.workspace import Changes

__all__ = [
    "BACKGROUND_STARTED_TEXT",
    "BackgroundValue",
    "DelegateArgs",
    "ForegroundValue",
    "HooksOf",
    "ParentCwdOf",
    "RunHooks",
    "create_delegation_tool",
    "default_description",
    "settle_foreground_run",
]

logger = logging.getLogger(__name__)

BACKGROUND_STARTED_TEXT: Final = "started background subagent job {job_id}"
"""What the model sees when a background job was started."""

_KIND_NAMES: Final = {"acp": "ACP agent", "dsh-sdk": "DSH SDK runtime"}
USAGE_TEXT: Final = (
    "The child does not see this conversation: put everything it needs in `task`. Set `run_in_background` to start "
    "a background job instead; read it with job_output and stop it with job_kill."
)
"""The standard usage text every delegation tool description ends with."""
_DEFAULT_DESCRIPTION: Final = (
    "Delegate a self-contained task to a fresh out-of-process {kind} ({name}) and return its final answer. "
    + USAGE_TEXT
)

ParentCwdOf = Callable[[object | None], str | None]
"""Maps a call's ``agent`` token to the parent session's working directory (``None`` when unknown)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunHooks:
    """Per-call observers of a foreground delegation; each is synchronous and must not block."""

    on_frame: FrameObserver | None = None
    """Receives the run's live stream and transcript frames."""
    on_result: Callable[[str, SubagentResult], None] | None = None
    """Called with ``(run_id, result)`` as soon as the run settled, before it is disposed."""
    on_spawn: Callable[[], None] | None = None
    """Called once the run's child process was spawned, before its handshake (a host-side fact only)."""
    traceparent: str | None = None
    """The caller's W3C trace context (e.g. MCP ``_meta.traceparent``): the run's span is its child, and the
    child gets the trace; an invalid value is ignored (docs/behaviour.md#telemetry-spans)."""
    on_usage: Callable[[str, RunUsage], None] | None = None
    """Called with ``(run_id, usage totals)`` as soon as the run settled, before ``on_result``, when the child
    reported usage (checked numbers only, docs/behaviour.md#records-usage)."""
    on_session: Callable[[str], None] | None = None
    """Called with the call's session id as soon as it is known (before the run starts; failures carry it too)."""


HooksOf = Callable[[ToolRunContext], RunHooks | None]
"""Looks up the per-call hooks of a tool call (``None`` for none)."""


class DelegateArgs(BaseModel):
    """The delegation tool's arguments."""

    model_config = ConfigDict(extra="forbid")

    task: Annotated[StrictStr, Field(min_length=1, description="The complete task for the subagent.")]
    label: StrictStr | None = Field(default=None, description="A short label for logs and job lists.")
    run_in_background: StrictBool = Field(
        default=False, description="Start a background job and return its id at once instead of waiting."
    )
    workspace: Literal["shared", "worktree"] | None = Field(
        default=None,
        description='"worktree": the child works in a git worktree of its own and its changes come back as a patch '
        'to apply with changes_apply; "shared": it works in your working tree. Default: the provider\'s setting.',
    )
    session_id: StrictStr | None = Field(
        default=None, description="Continue this session: the `session_id` an earlier call of this tool returned."
    )
    fork_session_id: StrictStr | None = Field(
        default=None,
        description="Start a new session forked from this one (the child starts with its context and, in a "
        "worktree, its files as of its last turn), if the agent supports forking.",
    )
    if_lost: Literal["error", "new"] = Field(
        default="error",
        description='What to do when the session cannot be resumed: "error" (the default) fails the call; "new" '
        "starts a fresh session and marks the result `context_reset`.",
    )


class ForegroundValue(BaseModel):
    """The value of a completed foreground delegation."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["foreground"]
    run_id: str
    output: list[ContentBlock]
    changes: Changes | None = None
    """A worktree run's changes (only when it left some)."""
    session_id: str | None = None
    context_reset: bool | None = None


class BackgroundValue(BaseModel):
    """The value of a started background job."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["background"]
    job_id: str
    run_id: str | None = None
    """The run id the job's run and its record will have (host-side; not in the rendered text)."""
    session_id: str | None = None


_DelegationValue = Annotated[ForegroundValue | BackgroundValue, Field(discriminator="kind")]


def _render(_arguments: JsonValue, value: ForegroundValue | BackgroundValue) -> list[ContentBlock]:
    if isinstance(value, BackgroundValue):
        return [{"type": "text", "text": BACKGROUND_STARTED_TEXT.format(job_id=value.job_id)}]
    if value.context_reset:
        return [{"type": "text", "text": CONTEXT_RESET_TEXT + "\n\n" + text_of(value.output)}]
    return [{"type": "text", "text": text_of(value.output)}]


_OUTPUT: Final = ToolOutput(TypeAdapter[ForegroundValue | BackgroundValue](_DelegationValue), _render)


def default_description(entry: EntryConfig) -> str:
    """The tool description of an entry without one: names the provider kind and the entry (never its command, which
    may be a wrapper such as ``prlimit`` or a path)."""
    return _DEFAULT_DESCRIPTION.format(kind=_KIND_NAMES[entry.kind], name=entry.name)


def tool_description(entry: EntryConfig, ttl_days: int | None = None) -> str:
    """The entry's ``description`` followed by the standard usage text (or the default when it has none), then the
    session paragraph when the host keeps sessions (``ttl_days`` given).

    Joined as sentences: a description that does not end a sentence (``.``, ``!``, ``?``) gets a full stop.
    """
    if entry.description is None or not entry.description.strip():
        text = default_description(entry)
    else:
        description = entry.description.rstrip()
        if not description.endswith((".", "!", "?")):
            description += "."
        text = f"{description} {USAGE_TEXT}"
    return text if ttl_days is None else f"{text} {session_text(entry, ttl_days)}"


def create_delegation_tool(
    provider: Provider,
    entry: EntryConfig,
    *,
    parent_cwd_of: ParentCwdOf | None = None,
    jobs: Callable[[], JobRunner | None] | None = None,
    hooks_of: HooksOf | None = None,
    slots: RunSlots | None = None,
    sessions: SessionTable | None = None,
) -> ToolDefinition:
    """Build ``delegate_<entry name>`` for ``provider``, declaring the entry's ``timeout_ms``.

    Args:
        provider: the provider the tool starts runs on.
        entry: the provider's validated entry (name, description, ``timeout_ms``).
        parent_cwd_of: maps the call's ``agent`` token to the parent cwd; without it the parent cwd is unknown.
        jobs: returns the job runner at call time; without one, background calls raise
            ``background jobs unavailable``.
        hooks_of: returns the per-call hooks of a foreground call.
        slots: the host-wide run limit a foreground run holds a slot of from before its start until it was
            disposed (a background job holds one through its runner).
        sessions: the host's session table; without one every call is a one-shot run and naming a session fails.
    """

    async def delegate(args: DelegateArgs, ctx: ToolRunContext) -> JsonValue:
        hooks = hooks_of(ctx) if hooks_of is not None else None
        on_frame = hooks.on_frame if hooks is not None else None
        request = SubagentRequest(
            label=args.label or entry.name,
            prompt=[{"type": "text", "text": args.task}],
            signal=ctx.signal,
            parent_cwd=parent_cwd_of(ctx.agent) if parent_cwd_of is not None else None,
            on_frame=on_frame,
            workspace=args.workspace,
            traceparent=valid_traceparent(hooks.traceparent) if hooks is not None else None,
        )
        check_capabilities(provider, request)
        turn = open_session_turn(
            sessions,
            provider,
            entry,
            request,
            SessionArgs(args.session_id, args.fork_session_id, args.if_lost == "new", args.label, args.workspace),
            on_session=hooks.on_session if hooks is not None else None,
        )
        # A session's later turn works where its first did, whatever the entry's default (SessionTurn.workspace).
        mode = turn.workspace if turn is not None else (args.workspace or entry.workspace)
        changes = _ChangesCapture(on_frame) if mode == "worktree" else None
        if changes is not None:
            request = replace(request, on_frame=changes.observe)
        start_run: Callable[[SubagentRequest], Awaitable[SubagentRun]] = (
            provider.start if turn is None else lambda request: turn.start(provider, request)
        )
        session_id = turn.session.id if turn is not None else None
        if args.run_in_background:
            job_runner = jobs() if jobs is not None else None
            return start_background(start_run, request, job_runner, entry.timeout_ms, session_id)
        if slots is None:
            return await _run_foreground(start_run, request, hooks, changes, turn)
        # Cancelled while queued, no slot is held: the start then settles aborted before any spawn.
        async with slots.hold(ctx.signal):
            return await _run_foreground(start_run, request, hooks, changes, turn)

    return define_tool(
        delegation_tool_name(entry.name),
        tool_description(entry, sessions.ttl_days if sessions is not None else None),
        DelegateArgs,
        _OUTPUT,
        delegate,
        timeout_ms=entry.timeout_ms,
    )


class _ChangesCapture:
    """Tees a worktree run's frames, keeping the data of its ``changes`` event for the tool value."""

    def __init__(self, forward: FrameObserver | None) -> None:
        self._forward = forward
        self.data: dict[str, Any] | None = None

    def observe(self, frame: StreamFrame) -> None:
        if isinstance(frame, EventFrame) and frame.event.type == "changes":
            self.data = dict(frame.event.data)
        if self._forward is not None:
            self._forward(frame)


async def _run_foreground(
    start_run: Callable[[SubagentRequest], Awaitable[SubagentRun]],
    request: SubagentRequest,
    hooks: RunHooks | None,
    changes: _ChangesCapture | None,
    turn: SessionTurn | None,
) -> JsonValue:
    with observe_spawns(hooks.on_spawn if hooks is not None else None):
        run = await start_run(request)
    if hooks is not None and (hooks.on_result is not None or hooks.on_usage is not None):
        await _report_result(run, hooks)
    value = await settle_foreground_run(run)
    if changes is not None and changes.data is not None:
        value["changes"] = changes.data
    if turn is not None:
        value["session_id"] = turn.session.id
        if turn.context_reset:
            value["context_reset"] = True
    return value


async def _report_result(run: SubagentRun, hooks: RunHooks) -> None:
    try:
        result = await run.result()
    except Exception:  # result() never raises; if it does anyway, settle_foreground_run reports it after dispose
        return
    on_usage, on_result = hooks.on_usage, hooks.on_result
    usage = usage_of_transcript(run.transcript) if on_usage is not None else None
    if on_usage is not None and usage is not None:
        _contained(run.id, lambda: on_usage(run.id, usage))
    if on_result is not None:
        _contained(run.id, lambda: on_result(run.id, result))


def _contained(run_id: str, observe: Callable[[], None]) -> None:
    try:
        observe()
    except Exception:  # containment boundary: a result observer never changes the call or skips the dispose
        logger.exception("subagent-host: result observer failed for run %s", run_id)


# Bounds the shielded dispose when the awaiting task itself is cancelled (the ladder bounds it normally).
DISPOSE_ON_CANCEL_TIMEOUT_S: Final = 30.0
_AGGREGATE_MESSAGE: Final = "subagent run failed: {result}; dispose failed: {dispose}"


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
