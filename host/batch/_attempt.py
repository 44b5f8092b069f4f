"""One batch item on an open ``Host``: the delegation tool call, its deadline, and retries for infrastructure only.

An attempt is one ``Host.execute`` of the item's ``delegate_<provider>`` tool under the batch's stop signal and the
item's own deadline. Only a child that never answered the handshake or died before the prompt was answered is
tried again (``is_infrastructure_failure``), after a back-off; a refusal, an error from the child itself and a
timeout are results. An item the batch's stop cut short is *interrupted*: it gets no result line, so a resume runs
it again. Every fact in a result line is the host's own or the child's output; diagnostics are closed lines.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, Literal

import anyio

from host._host import Host
from host.batch._items import BatchItem
from host.batch._results import RESULT_SCHEMA
from host.cancel import CancelSignal, deadline, timeout_of
from host.config import delegation_tool_name
from host.diagnostics import SubagentResult
from host.stream import EventFrame, StreamFrame
from host.tools import TOOL_TIMEOUT, RunHooks, ToolFailure, ToolResult

__all__ = [
    "RETRY_BACKOFF_MAX_S",
    "DiscardChanges",
    "RETRY_BACKOFF_S",
    "ItemOutcome",
    "ItemPlan",
    "RecordedStarts",
    "is_infrastructure_failure",
    "run_item",
]

RETRY_BACKOFF_S: Final = 0.5
"""The wait before the first retry; it doubles for every further one (tests may lower it)."""
RETRY_BACKOFF_MAX_S: Final = 8.0
"""Bounds the wait between two attempts."""

_FAILURE_FACTS: Final = re.compile(r"Subagent failure \(provider: [^;)]+; stage: ([a-z-]+); category: ([a-z-]+)")
_FAILURE_LINE: Final = re.compile(r"Subagent failure \([^)\n]*\)")
_RETRY_STAGES: Final = frozenset({"process", "initialize"})
_RETRY_CATEGORIES: Final = frozenset({"process-start", "process-exit", "transport"})


@dataclass(frozen=True, slots=True)
class ItemPlan:
    """One item with everything resolved: what an executor runs (plain data: it crosses to Ray workers)."""

    item: BatchItem
    provider: str
    """The entry the item runs on."""
    cwd: str
    """The absolute parent workspace."""
    timeout_ms: float | None
    """The deadline of each attempt (``None``: none)."""
    retries: int
    """How many more attempts an infrastructure failure gets."""
    backoff_s: float = RETRY_BACKOFF_S
    workspace: Literal["shared", "worktree"] | None = None
    """The delegation's ``workspace`` argument, resolved (the item's, else the batch's, else the entry's; ``None``:
    the entry's setting)."""


@dataclass(frozen=True, slots=True)
class ItemOutcome:
    """How one item ended: its result line, or ``interrupted`` (the batch stopped it; no line is written)."""

    item_id: str
    line: dict[str, Any] | None
    """The result line (``None`` when interrupted)."""

    @property
    def interrupted(self) -> bool:
        """The batch's stop cut the item short."""
        return self.line is None


@dataclass(slots=True)
class _Attempt:
    on_run: Callable[[str], None] | None
    run_id: str | None = None
    result: SubagentResult | None = None
    changes: dict[str, Any] | None = None
    """A worktree run's ``changes`` event data (also when the run failed: its branch and patch are kept)."""
    session_id: str | None = None
    """The session the attempt's run was a turn of (``RunHooks.on_session``)."""

    def on_session(self, session_id: str) -> None:
        self.session_id = session_id

    def on_frame(self, frame: StreamFrame) -> None:
        if not isinstance(frame, EventFrame):
            return
        if frame.event.type == "run/start" and self.on_run is not None:
            self.on_run(frame.run_id)
        elif frame.event.type == "changes":
            self.changes = dict(frame.event.data)

    def on_result(self, run_id: str, result: SubagentResult) -> None:
        self.run_id = run_id
        self.result = result


def is_infrastructure_failure(diagnostic: str | None) -> bool:
    """The child never answered the handshake or died before the prompt was answered (retried, never a result
    of the child's own: stages ``process``/``initialize``, categories ``process-start``/``process-exit``/``transport``).
    """
    if not diagnostic:
        return False
    facts = _FAILURE_FACTS.search(diagnostic)
    return facts is not None and facts.group(1) in _RETRY_STAGES and facts.group(2) in _RETRY_CATEGORIES


class RecordedStarts:
    """The run id of each session's recorded ``run/start``, from the host's ``on_record``: a start that failed before
    its run could report anything (spawn, handshake) still names its run record in the result line. An entry lives
    from its ``run/start`` until its attempt ``pop``s it."""

    def __init__(self) -> None:
        self._runs: dict[str, str] = {}

    def observe(self, run_id: str, record: dict[str, Any]) -> None:
        """A ``RecordObserver`` (``Host.open(on_record=...)``)."""
        if record.get("type") == "run/start":
            session_id = record.get("data", {}).get("session_id")
            if isinstance(session_id, str):
                self._runs[session_id] = run_id

    def pop(self, session_id: str | None) -> str | None:
        """The run the session's attempt started, forgotten from now on."""
        return self._runs.pop(session_id, None) if session_id is not None else None


DiscardChanges = Callable[[Iterable[str]], Awaitable[None]]
"""Deletes the kept changes (branch, patch, changes file) of the given run ids (``Workspaces.delete_branches``)."""


async def run_item(
    host: Host,
    plan: ItemPlan,
    stop: CancelSignal,
    *,
    on_run: Callable[[str], None] | None = None,
    discard_changes: DiscardChanges | None = None,
    starts: RecordedStarts | None = None,
) -> ItemOutcome:
    """Run ``plan`` on ``host`` until it has a result or the batch's ``stop`` fires, retrying infrastructure
    failures up to ``plan.retries`` times with a doubling back-off; ``on_run`` gets each attempt's run id as its run
    starts. A worktree attempt that is retried has its kept changes deleted by ``discard_changes`` first (so the
    retries of one item leave at most one branch: the last attempt's). ``starts``, fed by the host's ``on_record``,
    names the run of an attempt whose start failed."""
    started = time.monotonic()
    attempts = 0
    while True:
        attempts += 1
        line = await _attempt(host, plan, stop, on_run, starts)
        if line is None:
            return ItemOutcome(plan.item.id, None)
        if attempts > plan.retries or not is_infrastructure_failure(line.get("diagnostic")):
            break
        if discard_changes is not None and "changes" in line and line.get("run_id"):
            with anyio.CancelScope(shield=True):
                await discard_changes([line["run_id"]])
        delay = min(RETRY_BACKOFF_MAX_S, plan.backoff_s * 2 ** (attempts - 1))
        with anyio.move_on_after(delay):
            await stop.wait()
        if stop.cancelled:
            return ItemOutcome(plan.item.id, None)
    line["duration_ms"] = round((time.monotonic() - started) * 1000)
    line["attempts"] = attempts
    return ItemOutcome(plan.item.id, line)


async def _attempt(
    host: Host,
    plan: ItemPlan,
    stop: CancelSignal,
    on_run: Callable[[str], None] | None,
    starts: RecordedStarts | None,
) -> dict[str, Any] | None:
    attempt = _Attempt(on_run)
    arguments: dict[str, Any] = {"task": plan.item.task}
    if plan.item.label is not None:
        arguments["label"] = plan.item.label
    if plan.workspace is not None:
        arguments["workspace"] = plan.workspace
    async with deadline(stop, plan.timeout_ms or 0, TOOL_TIMEOUT) as signal:
        tool_result = await host.execute(
            delegation_tool_name(plan.provider),
            arguments,
            signal=signal,
            agent=plan.cwd,
            hooks=RunHooks(
                on_result=attempt.on_result,
                on_session=attempt.on_session,
                on_frame=attempt.on_frame if on_run is not None or plan.workspace == "worktree" else None,
            ),
        )
        timed_out = not stop.cancelled and timeout_of(signal, TOOL_TIMEOUT) is not None
    result = attempt.result
    started_run = starts.pop(attempt.session_id) if starts is not None else None
    if stop.cancelled and (result is None or result.stop_reason != "completed"):
        return None
    run_id = attempt.run_id if attempt.run_id is not None else started_run
    line: dict[str, Any] = {"schema": RESULT_SCHEMA, "id": plan.item.id, "run_id": run_id}
    line["provider"] = plan.provider
    if result is not None:
        line["stop_reason"] = result.stop_reason
        line["output"] = result.output
        if result.diagnostic is not None:
            line["diagnostic"] = result.diagnostic
    else:
        line["stop_reason"] = "aborted" if timed_out else "error"
        line["output"] = []
        diagnostic = None if timed_out else _start_failure_diagnostic(tool_result)
        if diagnostic is not None:
            line["diagnostic"] = diagnostic
        elif not timed_out and isinstance(tool_result, ToolFailure):
            # No closed line (e.g. a workspace refusal): the tool's model-visible failure text, safe by the registry's
            # contract (docs/behaviour.md#registry-failures-from-exceptions), says why.
            line["error"] = tool_result.error.message
            if tool_result.error.info is not None:
                line["error_code"] = tool_result.error.info.code
    if timed_out:
        line["error_code"] = TOOL_TIMEOUT
    if result is not None and attempt.session_id is not None:
        line["session_id"] = attempt.session_id
    if attempt.changes is not None:
        line["changes"] = attempt.changes
    return line


def _start_failure_diagnostic(tool_result: ToolResult) -> str | None:
    """The closed failure lines of a start failure (the tool's message is the provider's safe error text)."""
    if not isinstance(tool_result, ToolFailure):
        return None
    lines = _FAILURE_LINE.findall(tool_result.error.message)
    return "; ".join(lines) if lines else None
