"""One ACP run: spawn → ``initialize`` → ``session/new`` → publish → ``session/prompt`` → settle → dispose.

``start_acp_run`` returns only a published run; any startup failure or cancellation rolls the private child back
through the shared, shielded and bounded teardown ladder before raising a safe error. A published run's
``result()`` never raises and its ``dispose()`` runs the ladder once, with one shared outcome. Every
model-visible text comes from closed facts; raw errors go to the error sink and ``__cause__`` only.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Final, Literal

import anyio
from anyio.abc import TaskGroup

from host._exceptions import AcpConnectionClosed, AcpResponseError, AcpRunFailure, StartAbortedError
from host._json import ContentBlock
from host._text import joined_text
from host.acp_provider._connection import AcpConnection
from host.acp_provider._failures import (
    classify_prompt_failure,
    handshake_failure,
    release_failure,
    startup_run_failure,
)
from host.acp_provider._session import OpenedSession, TurnSession
from host.acp_provider._spec import (
    AcpRunSpec,
    StartupFailure,
    spawn_capturing_stderr,
)
from host.acp_provider._wire import (
    cancelled_answer,
    choose_permission,
    map_stop_reason,
    prompt_text_blocks,
)
from host.cancel import TimeoutReason
from host.diagnostics import (
    AcpFailureFacts,
    AcpStage,
    PermissionDecision,
    SubagentResult,
    acp_diagnostic,
    acp_run_failure,
)
from host.process import ManagedProcess, ProcessHandle, ProcessOutcome, tail_bytes
from host.run._attempt import AgentInfo, PhaseClock, notify_attempt, read_agent_info
from host.run._child import SpawnFn
from host.run._contracts import SubagentRequest
from host.run._lifecycle import ErrorSink, RunLifecycle, call_error_sink, new_run_id
from host.run._output_budget import OutputBudget
from host.stream import AcpChunkMapper, TextDelta, TranscriptEvent, acp_prompt_usage, acp_usage_update

__all__ = ["START_ABORTED_MESSAGE", "AcpRun", "AcpRunSpec", "start_acp_run"]

logger = logging.getLogger(__name__)

START_ABORTED_MESSAGE: Final = "subagent request was aborted before the ACP child started"
"""``StartAbortedError`` text: pre-aborted, or cancelled during startup (no ``subagent-acp:`` prefix)."""

# Bounds the run task's `session/cancel` write after a local cancel (dispose waits for it, bounded, before the ladder).
_CANCEL_WRITE_TIMEOUT_S: Final = 1.0


class AcpRun:
    """One ACP run: its lifecycle, connection, output fold, permission decision, handshake and prompt."""

    def __init__(
        self,
        request: SubagentRequest,
        *,
        spec: AcpRunSpec,
        task_group: TaskGroup,
        on_error: ErrorSink | None,
        provider_name: str,
    ) -> None:
        self._spec = spec
        self._prompt_blocks = prompt_text_blocks(request.prompt)
        self._mapper = AcpChunkMapper()
        self._texts: list[str] = []
        self._budget = OutputBudget(spec.max_output_bytes)
        self._frozen_output: list[ContentBlock] | None = None
        self._decision: PermissionDecision | None = None
        self._failure_facts: AcpFailureFacts | None = None
        self._session_id: str | None = None
        self._prompt_outstanding = False
        self._session_cancel_due = False
        self._conn: AcpConnection | None = None
        self._clock = PhaseClock()
        self._turn = TurnSession(request.lease)
        self._lifecycle: RunLifecycle[StartupFailure] = RunLifecycle(
            request,
            run_id=request.run_id or new_run_id(),
            kind="acp",
            provider_name=provider_name,
            task_group=task_group,
            on_error=on_error,
            start_aborted_message=START_ABORTED_MESSAGE,
            output=self._output,
            freeze=self._freeze,
            release=self._release,
            release_failure=self._release_failure,
            report_interrupted_release=False,
            on_local_cancel=self._on_local_cancel,
        )
        self._journal = self._lifecycle.journal

    @classmethod
    async def start(
        cls,
        request: SubagentRequest,
        spec: AcpRunSpec,
        *,
        task_group: TaskGroup,
        on_error: ErrorSink | None,
        spawn: SpawnFn,
        provider_name: str,
    ) -> AcpRun:
        """Spawn the child and race its handshake; see :func:`start_acp_run`."""
        run = cls(request, spec=spec, task_group=task_group, on_error=on_error, provider_name=provider_name)
        run._lifecycle.announce(run)
        warm = run._turn.borrow(on_update=run._on_update, on_permission=run._decide_permission)
        if warm is not None:  # a warm session: this turn borrows its live child (no spawn, no handshake)
            run._session_id = warm.agent_session_id
            await run._open(warm.conn)
            return run
        try:
            conn = await AcpConnection.open(
                spawn,
                [spec.command, *spec.args],
                cwd=spec.cwd,
                env=spec.env,
                inherit_env=spec.inherit_env,
                grace_ms=spec.dispose_grace_ms,
                eof_grace_ms=spec.dispose_eof_grace_ms,
                task_group=task_group,
                on_update=run._on_update,
                on_permission=run._decide_permission,
                name=f"ACP child of run {run.id}",
                meta={"traceparent": spec.traceparent} if spec.traceparent is not None else None,
            )
        except Exception as raw:  # any spawn failure is `process-start`; the raw text stays host-only
            call_error_sink(on_error, raw)
            run._lifecycle.start_failed()
            raise acp_run_failure(AcpFailureFacts("process", "process-start"), raw) from raw
        run._clock.mark("spawn")
        await run._open(conn)
        return run

    # -- SubagentRun -------------------------------------------------------------------------------------------

    @property
    def id(self) -> str:
        """The host-minted run id (never the child's session id)."""
        return self._lifecycle.id

    @property
    def transcript(self) -> tuple[TranscriptEvent, ...]:
        """A snapshot of the run's transcript."""
        return self._lifecycle.transcript

    @property
    def disposed(self) -> bool:
        """Whether the child was released."""
        return self._lifecycle.disposed

    async def result(self) -> SubagentResult:
        """Wait for the settled result; never raises."""
        return await self._lifecycle.result()

    async def dispose(self) -> None:
        """Cancel locally, then run the ladder once; every call sees the same outcome.

        Raises:
            AcpRunFailure: the ladder failed; the raw error is its ``__cause__``.
        """
        await self._lifecycle.dispose()

    # -- ChildFacts (run records) ------------------------------------------------------------------------------

    def child_outcome(self) -> ProcessOutcome | None:
        """The child's exit facts, once observed."""
        return self._conn.handle.outcome if self._conn is not None else None

    def child_stderr(self) -> bytes:
        """The child's captured stderr tail as bytes (host-only; empty when not captured)."""
        handle = self._conn.handle if self._conn is not None else None
        if not isinstance(handle, ManagedProcess):
            return b""
        return tail_bytes(handle.stderr_tail)

    def child_non_json_lines(self) -> int:
        """How many non-blank non-JSON lines the child wrote to stdout (run records, the non-ACP hint)."""
        return self._conn.child.peer.non_json.count if self._conn is not None else 0

    # -- startup -----------------------------------------------------------------------------------------------

    @property
    def _handle(self) -> ProcessHandle:
        assert self._conn is not None
        return self._conn.handle

    async def _open(self, conn: AcpConnection) -> None:
        """Race the handshake against local cancel; publish, or roll back and raise (docs/behaviour.md#acp-startup)."""
        self._conn = conn
        await self._lifecycle.start(
            self._handshake,
            startup_failure=self._startup_failure_of,
            attempt=self._attempt,
            diagnostic=self._failure_diagnostic,
            after_settle=self._write_session_cancel,
            name=f"ACP prompt of run {self.id}",
        )

    async def _startup_failure_of(self, failure: StartupFailure) -> AcpRunFailure:
        return await startup_run_failure(failure, self._handle, self._spec.dispose_grace_ms, self._lifecycle.on_error)

    async def _handshake(self) -> StartupFailure | None:
        assert self._conn is not None
        if self._turn.borrowed:
            return None
        timeout_ms = self._spec.initialize_timeout_ms
        stage: AcpStage = "initialize"
        opened: OpenedSession | StartupFailure | None = None
        agent = AgentInfo()
        # One deadline over both response waits (a deliberate deviation: docs/behaviour.md, ACP deviations).
        with anyio.CancelScope(deadline=anyio.current_time() + math.ceil(timeout_ms) / 1000) as bound:
            try:
                initialized = await self._conn.initialize()
                agent = read_agent_info(initialized, acp=True)
                self._clock.mark("initialize")
                stage = self._turn.open_stage
                opened = await self._turn.open(self._conn, self._spec.cwd, initialized)
                self._clock.mark("session/new")
            except (AcpConnectionClosed, AcpResponseError) as raw:
                return handshake_failure(stage, raw)
        if bound.cancelled_caught:
            return StartupFailure(stage, TimeoutReason(f"ACP {stage}", timeout_ms), AcpFailureFacts(stage, "timeout"))
        if not isinstance(opened, OpenedSession):
            return opened
        self._session_id = opened.session_id
        notify_attempt(self._lifecycle.attempt_observer, "handshake", self._clock.facts(agent))
        return None

    # -- the published attempt ---------------------------------------------------------------------------------

    async def _write_session_cancel(self) -> None:
        if self._session_cancel_due and self._session_id is not None and self._conn is not None:
            self._session_cancel_due = False
            with anyio.move_on_after(_CANCEL_WRITE_TIMEOUT_S):
                await self._conn.cancel(self._session_id)

    async def _attempt(self) -> SubagentResult:
        session_id = self._session_id
        assert session_id is not None and self._conn is not None
        with self._lifecycle.interruptible():
            self._prompt_outstanding = True
            try:
                response = await self._budget.run(
                    self._turn.prompt(self._conn, session_id, self._prompt_blocks, self._freeze_on_response)
                )
            except (AcpConnectionClosed, AcpResponseError) as raw:
                self._prompt_outstanding = False
                self._freeze()
                # Interruptible by local cancel: this runs inside the attempt's scope.
                self._failure_facts = await classify_prompt_failure(raw, self._handle, self._spec.dispose_grace_ms)
                raise
            finally:
                self._prompt_outstanding = False
            return self._result_of(response)
        # Local cancel: settlement turns this placeholder into `aborted` with the partial output.
        return SubagentResult(output=[], stop_reason="aborted")

    def _result_of(self, response: object) -> SubagentResult:
        stop_reason, fact = map_stop_reason(response)
        facts: AcpFailureFacts | None = None
        if self._budget.exceeded:
            stop_reason, facts = "error", AcpFailureFacts("prompt", "output-limit")
        elif stop_reason == "error":
            category: Literal["remote-limit", "unknown"] = "remote-limit" if fact == "max_turn_requests" else "unknown"
            facts = AcpFailureFacts("prompt", category, stop_reason=fact)
        diagnostic = None if stop_reason == "completed" else acp_diagnostic(facts, self._decision)
        return SubagentResult(output=self._output(), stop_reason=stop_reason, diagnostic=diagnostic)

    def _failure_diagnostic(self) -> str | None:
        return acp_diagnostic(self._failure_facts, self._decision) if self._failure_facts is not None else None

    # -- inline callbacks (reader and cancel listener) --------------------------------------------------------

    def _on_update(self, update: Mapping[str, object]) -> None:
        journal = self._journal
        if not self._lifecycle.published or journal.frozen:
            return
        chunks = self._mapper.map_update(update)
        for chunk in self._budget.admitted(chunks):
            # A text delta is exactly a non-empty `agent_message_chunk` text (docs/behaviour.md#stream-acp-mapping): the
            # fold.
            if isinstance(chunk, TextDelta):
                self._texts.append(chunk.text)
            journal.chunk(chunk)
        if not chunks and update.get("sessionUpdate") == "usage_update":
            journal.report_usage(acp_usage_update(update), cumulative_cost=True)
        if self._budget.exceeded:
            self._freeze()

    def _decide_permission(self, params: Mapping[str, object]) -> dict[str, object]:
        if self._lifecycle.cancelled:
            return cancelled_answer()  # ACP: a client that cancelled answers `cancelled` and records nothing
        choice = choose_permission(self._spec.permission, params)
        if not self._journal.frozen:
            self._decision = choice.decision
            self._journal.permission(choice.decision)
        return choice.answer

    def _on_local_cancel(self) -> None:
        if self._lifecycle.published and self._prompt_outstanding:
            # docs/behaviour.md#acp-cancellation: the run task writes `session/cancel` for the prompt this cancel
            # interrupts.
            self._session_cancel_due = True

    def _freeze_on_response(self, response: object) -> None:
        # Inline in the reader while it processes the prompt response: later lines can no longer reach the run.
        if self._lifecycle.published:
            self._journal.report_usage(acp_prompt_usage(response), cumulative_cost=True)
        self._freeze()

    def _freeze(self) -> None:
        if self._frozen_output is None:
            joined = joined_text(self._texts)
            self._frozen_output = [{"type": "text", "text": joined}] if joined else []
        self._journal.freeze()

    def _output(self) -> list[ContentBlock]:
        self._freeze()
        assert self._frozen_output is not None
        return [dict(block) for block in self._frozen_output]

    # -- release ------------------------------------------------------------------------------------------------

    async def _release(self) -> None:
        assert self._conn is not None
        await self._turn.release(
            self._conn,
            self._session_id,
            published=self._lifecycle.published,
            usable=not self._budget.exceeded,
            eof_grace_ms=self._spec.dispose_eof_grace_ms,
        )

    def _release_failure(self, raw: Exception) -> AcpRunFailure:
        """Report a ladder failure to the sink and build its safe form (docs/behaviour.md#acp-teardown-failure)."""
        return release_failure(raw, self._handle, self._lifecycle.on_error)


async def start_acp_run(
    request: SubagentRequest,
    spec: AcpRunSpec,
    *,
    task_group: TaskGroup,
    on_error: ErrorSink | None = None,
    spawn: SpawnFn = spawn_capturing_stderr,
    provider_name: str = "acp",
) -> AcpRun:
    """Start one run from a resolved spec; return it once ``session/new`` succeeded (the ownership transfer).

    Args:
        request: the task; ``request.signal`` is the run's only cancellation channel.
        spec: the resolved command, cwd, env, policy and graces.
        task_group: owns the connection and prompt tasks (the host's group).
        on_error: the error sink; receives each raw failure once.
        spawn: creates the managed child (a test seam).
        provider_name: recorded in the transcript's ``run/start``.

    Raises:
        StartAbortedError: the signal fired before or during startup (the child, if any, was rolled back).
        AcpRunFailure: spawn or handshake failed (safe message; raw error on ``__cause__``).
        AggregateError: a startup failure or cancellation, and the rollback ladder failed too.
    """
    if request.signal.cancelled:
        raise StartAbortedError(START_ABORTED_MESSAGE)
    return await AcpRun.start(
        request, spec, task_group=task_group, on_error=on_error, spawn=spawn, provider_name=provider_name
    )
