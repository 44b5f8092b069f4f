"""``tools/call`` through the host's registry: caller-owned cancellation and live progress.

Each call runs in its request's own task. The host-wide run limit is the host's own (``Host.open``'s
``max_concurrent_runs``, which ``serve --max-concurrent-runs`` sets): a delegation cancelled while it waits for a
slot starts nothing and is answered nothing. A *watcher* task turns the cancellation of the request's
task (a peer's ``notifications/cancelled``, or shutdown) into ``CancelController.cancel()``; the registry
runs the body shielded, so ``Host.execute`` returns only after the run settled and was disposed, and the handler
then re-raises the cancellation, so a cancelled id never gets a response. A *pump* task sends the child's
coalesced text as ``notifications/progress`` (at most one per ``PROGRESS_INTERVAL_S``), and is drained before the
result is returned, so every progress notification precedes the result on the wire.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import anyio
import anyio.lowlevel

from host._host import Host
from host._text import ends_inside_a_pair, well_formed
from host.cancel import CancelController
from host.diagnostics import SubagentResult
from host.mcp._connection import RequestContext
from host.mcp._models import CallToolParams, ProgressToken
from host.mcp._notices import Notices
from host.mcp._tools import call_tool_result, structured_content
from host.stream import ChunkFrame, RunUsage, StreamFrame, TextDelta
from host.tools import RunHooks, ToolResult, ToolSuccess

__all__ = ["PROGRESS_INTERVAL_S", "CallHandler"]

logger = logging.getLogger(__name__)

PROGRESS_INTERVAL_S: Final = 0.25
"""At most one progress notification per call in this interval."""
_CALLER_CANCELLED: Final = "MCP client cancelled the call"


@dataclass(slots=True)
class _Progress:
    """The child's text not yet sent as progress, and whether the call has settled."""

    pending: list[str] = field(default_factory=list[str])
    sent_chars: int = 0
    closed: bool = False
    changed: anyio.Event = field(default_factory=anyio.Event)
    drained: anyio.Event = field(default_factory=anyio.Event)

    def on_frame(self, frame: StreamFrame) -> None:
        if isinstance(frame, ChunkFrame) and isinstance(frame.chunk, TextDelta) and frame.chunk.text:
            self.pending.append(frame.chunk.text)
            self.changed.set()

    def close(self) -> None:
        self.closed = True
        self.changed.set()

    async def wait_changed(self) -> None:
        await self.changed.wait()
        self.changed = anyio.Event()


class CallHandler:
    """The server's ``tools/call``: one registry call per request."""

    def __init__(self, host: Host, delegation_tools: Mapping[str, str], notices: Notices) -> None:
        self._host = host
        self._delegation_tools = delegation_tools
        self._notices = notices
        self._call_numbers = itertools.count(1)

    async def __call__(self, ctx: RequestContext, params: CallToolParams) -> dict[str, Any]:
        provider = self._delegation_tools.get(params.name)
        token = ctx.meta.progress_token if ctx.meta is not None else None
        wants_progress = token is not None
        call_id = f"mcp-call-{next(self._call_numbers)}"
        progress = _Progress()
        settled: list[tuple[str, SubagentResult]] = []
        usage: list[RunUsage] = []
        sessions: list[str] = []
        hooks: RunHooks | None = None
        if provider is not None:
            extra = ctx.meta.model_extra if ctx.meta is not None else None
            traceparent = extra.get("traceparent") if extra else None
            hooks = RunHooks(
                on_frame=progress.on_frame if wants_progress else None,
                on_result=lambda run_id, result: settled.append((run_id, result)),
                on_usage=lambda _run_id, totals: usage.append(totals),
                # The caller's trace context, as given: the delegation tool checks it.
                traceparent=traceparent if isinstance(traceparent, str) else None,
                on_session=sessions.append,
            )
        result: ToolResult | None = None
        controller = CancelController()
        done = False
        async with anyio.create_task_group() as group:

            async def watch() -> None:
                try:
                    await anyio.sleep_forever()
                finally:
                    if not done:
                        controller.cancel(_CALLER_CANCELLED)

            group.start_soon(watch)
            if token is not None:
                group.start_soon(_pump, ctx, token, progress)
            try:
                result = await self._host.execute(
                    params.name,
                    dict(params.arguments or {}),
                    signal=controller.signal,
                    call_id=call_id,
                    hooks=hooks,
                )
            finally:
                done = True
                progress.close()
            # A cancelled call raises here, once its body settled: its request then gets no response.
            if wants_progress:
                await progress.drained.wait()
            else:
                await anyio.lowlevel.checkpoint()
            group.cancel_scope.cancel()
        assert result is not None  # execute returned: only a raise (a cancel) skips the assignment
        if provider is None:
            return call_tool_result(result, None)
        if isinstance(result, ToolSuccess) and isinstance(result.value, dict) and "job_id" in result.value:
            job_id = result.value["job_id"]
            if isinstance(job_id, str):
                self._notices.own_job(job_id, ctx.connection)
        structured = structured_content(
            provider,
            result,
            settled[0] if settled else None,
            usage[0] if usage else None,
            sessions[0] if sessions else None,
        )
        return call_tool_result(result, structured)


async def _pump(ctx: RequestContext, token: ProgressToken, progress: _Progress) -> None:
    """Send the pending text as one notification, at most once per interval; set ``drained`` once all is sent."""
    while True:
        if not progress.pending and not progress.closed:
            await progress.wait_changed()
            continue
        text = "".join(progress.pending)
        progress.pending.clear()
        if ends_inside_a_pair(text) and not progress.closed:
            text, held = text[:-1], text[-1]  # its low half may come next: never split a character between notices
            progress.pending.append(held)
        if text:
            progress.sent_chars += len(text)
            message = well_formed(text)
            try:
                await ctx.send(
                    "notifications/progress",
                    {"progressToken": token, "progress": progress.sent_chars, "message": message},
                )
            except Exception:  # containment boundary: a failed progress write never fails the call
                logger.debug("subagent-host serve: a progress notification could not be sent", exc_info=True)
        if progress.closed and not progress.pending:
            progress.drained.set()
            return
        # Coalesce: what streams during the interval goes out in one notification; a settle ends the wait.
        with anyio.move_on_after(PROGRESS_INTERVAL_S):
            while not progress.closed:
                await progress.wait_changed()
