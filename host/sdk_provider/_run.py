"""One DSH SDK run: handshake (raced against local cancel) → publish → receipt-gated session run → settle → dispose.

``start_sdk_run`` returns only a published run; a startup failure or cancellation closes the private client exactly
once before raising a safe error (docs/behaviour.md#sdk-startup-rejections). A published run's ``result()`` never
raises; ``dispose()`` cancels locally, closes the client once (shutdown + ladder) and fails only as ``R(shutdown,
unknown)``. Raw errors reach only the error sink and ``__cause__``.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable, Sequence
from typing import Final, Protocol

import anyio
from anyio.abc import TaskGroup

from host._exceptions import SdkRunFailure, StartAbortedError
from host._json import ContentBlock
from host.config import MAX_OUTPUT_BYTES
from host.diagnostics import (
    SdkCategory,
    SubagentResult,
    sdk_failure_line,
    sdk_run_failure,
)
from host.process import ProcessOutcome, tail_bytes
from host.run._attempt import AgentInfo, PhaseClock, notify_attempt
from host.run._contracts import AgentOptions, SubagentRequest
from host.run._lifecycle import ErrorSink, RunLifecycle, call_error_sink, new_run_id
from host.run._output_budget import OutputBudget
from host.run._spawned import also_observe_spawns
from host.sdk_provider._mapping import OutputFold, classify_error, delta_text, result_of_turn_end
from host.sdk_provider.client import (
    NotificationObserver,
    SdkClient,
    SdkRunSpec,
    ServerInfo,
    SessionNotification,
    SessionRunOutcome,
)
from host.stream import SdkChunkMapper, TextDelta, TranscriptEvent, sdk_message_usage

__all__ = ["START_ABORTED_MESSAGE", "ClientFactory", "SdkClientLike", "SdkRun", "resolve_route", "start_sdk_run"]

logger = logging.getLogger(__name__)

# Longest runtime-supplied name or version a handshake record keeps.
_FACT_LIMIT: Final = 200

START_ABORTED_MESSAGE: Final = "subagent request was aborted before the SDK child started"
"""``StartAbortedError`` text: pre-aborted, or cancelled during the handshake (no ``subagent-dsh-sdk:`` prefix)."""


class SdkClientLike(Protocol):
    """What a run needs from its client; ``SdkClient`` satisfies it, and test seams wrap one."""

    async def start(self, task_group: TaskGroup) -> ServerInfo:
        """Spawn the runtime and complete the bounded ``initialize`` handshake."""
        ...

    async def run(
        self,
        session_id: str,
        content_blocks: Sequence[ContentBlock],
        on_notification: NotificationObserver | None = None,
    ) -> SessionRunOutcome:
        """Prompt the root session and consume it up to the root ``idle`` after the receipt."""
        ...

    async def aclose(self) -> None:
        """Shutdown and ladder, once; raises only when the ladder fails."""
        ...

    @property
    def outcome(self) -> ProcessOutcome | None:
        """The runtime's exit facts, once observed (run records)."""
        ...

    @property
    def stderr_tail(self) -> tuple[str, ...]:
        """The newest non-empty stderr lines of the runtime (host-only; run records)."""
        ...

    @property
    def non_json_lines(self) -> int:
        """How many non-blank non-JSON lines the runtime wrote to stdout (run records, the non-ACP hint)."""
        ...


ClientFactory = Callable[[SdkRunSpec], SdkClientLike]
"""Builds the run's client from its resolved spec (``SdkClient`` unless a test wraps it)."""


class SdkWarmChild:
    """A live DSH SDK runtime kept by its session between turns (``host.run._lease.WarmChild``). Warm only: the
    protocol has no resume and no cancel, so the session lives exactly as long as this runtime."""

    def __init__(self, client: SdkClientLike, session_id: str) -> None:
        self.client: Final = client
        self.session_id: Final = session_id

    @property
    def alive(self) -> bool:
        """Whether the runtime has not exited."""
        return self.client.outcome is None

    async def aclose(self) -> None:
        """The client's close (``shutdown``, then the ladder), shielded; never raises (a failure is logged)."""
        with anyio.CancelScope(shield=True):
            try:
                await self.client.aclose()
            except Exception:  # containment boundary: a session going cold never fails its caller
                logger.warning("subagent-host: closing a warm DSH SDK runtime failed", exc_info=True)


def resolve_route(spec: SdkRunSpec, options: AgentOptions | None) -> SdkRunSpec:
    """Apply a request's ``agent_options`` over the spec's route (docs/behaviour.md#sdk-route); each run gets its
    own."""
    if options is None:
        return spec
    return dataclasses.replace(
        spec,
        provider=options.provider if options.provider is not None else spec.provider,
        model=options.model if options.model is not None else spec.model,
        reasoning_effort=options.reasoning_effort if options.reasoning_effort is not None else spec.reasoning_effort,
        max_tokens=options.max_tokens if options.max_tokens is not None else spec.max_tokens,
    )


class SdkRun:
    """One DSH SDK run: its lifecycle, client, fold and the receipt-gated session run."""

    def __init__(
        self,
        request: SubagentRequest,
        *,
        client: SdkClientLike,
        task_group: TaskGroup,
        on_error: ErrorSink | None,
        provider_name: str,
        max_output_bytes: int = MAX_OUTPUT_BYTES,
    ) -> None:
        self._prompt = request.prompt
        self._client = client
        self._task_group = task_group
        self._lease = request.lease
        warm = request.lease.warm if request.lease is not None else None
        # A warm session's turn borrows its live runtime and goes on with the same session id.
        self._borrowed = isinstance(warm, SdkWarmChild) and warm.client is client
        self._session_id = warm.session_id if isinstance(warm, SdkWarmChild) else "session-" + uuid.uuid4().hex
        self._turn_done = False
        self._mapper = SdkChunkMapper()
        self._fold = OutputFold()
        # One bound for the stream and the output: the fold takes only text the budget admitted.
        self._budget = OutputBudget(max_output_bytes)
        self._failure_category: SdkCategory = "unknown"
        self._lifecycle: RunLifecycle[Exception] = RunLifecycle(
            request,
            run_id=request.run_id or new_run_id(),
            kind="dsh-sdk",
            provider_name=provider_name,
            task_group=task_group,
            on_error=on_error,
            start_aborted_message=START_ABORTED_MESSAGE,
            output=self._output,
            freeze=self._freeze,
            release=self._release,
            release_failure=self._release_failure,
            report_interrupted_release=True,
        )
        self._journal = self._lifecycle.journal

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
        """Whether the client was closed."""
        return self._lifecycle.disposed

    async def result(self) -> SubagentResult:
        """Wait for the settled result; never raises."""
        return await self._lifecycle.result()

    def child_outcome(self) -> ProcessOutcome | None:
        """The runtime's exit facts, once observed."""
        return self._client.outcome

    def child_stderr(self) -> bytes:
        """The runtime's captured stderr tail as bytes (host-only)."""
        return tail_bytes(self._client.stderr_tail)

    def child_non_json_lines(self) -> int:
        """How many non-blank non-JSON lines the runtime wrote to stdout."""
        return self._client.non_json_lines

    async def dispose(self) -> None:
        """Cancel locally, then close the client once; every call sees the same outcome.

        Raises:
            SdkRunFailure: closing failed, as ``R(shutdown, unknown)``; the raw error is its ``__cause__``.
        """
        await self._lifecycle.dispose()

    # -- startup -----------------------------------------------------------------------------------------------

    @classmethod
    async def start(
        cls,
        request: SubagentRequest,
        client: SdkClientLike,
        *,
        task_group: TaskGroup,
        on_error: ErrorSink | None,
        provider_name: str,
        max_output_bytes: int = MAX_OUTPUT_BYTES,
    ) -> SdkRun:
        """Race the handshake against local cancel; publish, or close the client once and raise
        (docs/behaviour.md#sdk-startup, #sdk-startup-rejections)."""
        run = cls(
            request,
            client=client,
            task_group=task_group,
            on_error=on_error,
            provider_name=provider_name,
            max_output_bytes=max_output_bytes,
        )
        run._lifecycle.announce(run)
        await run._lifecycle.start(
            run._handshake,
            startup_failure=run._startup_failure,
            attempt=run._attempt,
            diagnostic=lambda: sdk_failure_line("session-run", run._failure_category),
            name=f"DSH SDK session run {run.id}",
        )
        return run

    async def _handshake(self) -> Exception | None:
        if self._borrowed:
            return None
        clock = PhaseClock()
        try:
            with also_observe_spawns(lambda: clock.mark("spawn")):
                info = await self._client.start(self._task_group)
        except Exception as exc:
            # The first to settle decides: a failure that settled before any cancel is authoritative.
            return exc
        clock.mark("initialize")
        agent = AgentInfo(info.name[:_FACT_LIMIT], info.version[:_FACT_LIMIT])
        notify_attempt(self._lifecycle.attempt_observer, "handshake", clock.facts(agent))
        if self._lease is not None:
            self._lease.opened(self._session_id, context_reset=False)
        return None

    async def _release(self) -> None:
        """Hand a runtime whose turn ended cleanly back to its session; otherwise close it (the session is lost)."""
        lease = self._lease
        keep = lease is not None and lease.keep_warm and self._turn_done and self._client.outcome is None
        if lease is not None and keep:
            lease.keep(SdkWarmChild(self._client, self._session_id))
            return
        if lease is not None and self._borrowed and not self._lifecycle.published:
            lease.keep(SdkWarmChild(self._client, self._session_id))  # an aborted start never touched it
            return
        await self._client.aclose()

    async def _startup_failure(self, failure: Exception) -> SdkRunFailure:
        call_error_sink(self._lifecycle.on_error, failure)
        return sdk_run_failure("initialize", classify_error(failure), failure)

    # -- the published attempt ---------------------------------------------------------------------------------

    async def _attempt(self) -> SubagentResult:
        with self._lifecycle.interruptible():
            try:
                # The run keeps no event list: the stream and the fold keep what counts, and the last turn/end.
                outcome = await self._budget.run(
                    self._client.run(self._session_id, self._prompt, on_notification=self._observe)
                )
            except Exception as exc:
                self._freeze()
                self._failure_category = classify_error(exc)
                raise
            self._freeze()
            self._turn_done = outcome is not None and not self._budget.exceeded
            if outcome is None or self._budget.exceeded:
                diagnostic = sdk_failure_line("session-run", "output-limit")
                return SubagentResult(output=self._fold.output(), stop_reason="error", diagnostic=diagnostic)
            stop_reason, diagnostic = result_of_turn_end(outcome.last_turn_end)
            return SubagentResult(output=self._fold.output(), stop_reason=stop_reason, diagnostic=diagnostic)
        # Local cancel: settlement turns this placeholder into `aborted` with the partial output.
        return SubagentResult(output=[], stop_reason="aborted")

    def _observe(self, notification: SessionNotification) -> None:
        """Fold and stream one collected root notification, synchronously in the run loop (until frozen)."""
        if self._journal.frozen:
            return
        params = notification.params
        if notification.method == "session.event":
            event = params["event"]
            chunks = self._mapper.map_event(event)
            kept = list(self._budget.admitted(chunks))
            for chunk in kept:
                if isinstance(chunk, TextDelta):
                    self._fold.append_text(chunk.text)
                self._journal.chunk(chunk)
            if not chunks:
                text = delta_text(event)
                if text is not None:  # a text delta without an index: no stream chunk, but it is output
                    self._fold.append_text(self._budget.admit(text))
            if not self._budget.exceeded:
                self._fold.observe_message(event)
            if event.get("type") == "assistant/message":
                self._journal.report_usage(sdk_message_usage(event.get("data")), cumulative_cost=False)
            if self._budget.exceeded:
                self._freeze()
        elif params.get("status") == "idle":
            self._freeze()  # the outcome is fixed at the root idle

    def _output(self) -> list[ContentBlock]:
        return self._fold.output()

    def _freeze(self) -> None:
        self._fold.freeze()
        self._journal.freeze()

    def _release_failure(self, raw: Exception) -> SdkRunFailure:
        """Report a close failure to the sink and build its safe form ``R(shutdown, unknown)``."""
        call_error_sink(self._lifecycle.on_error, raw)
        return sdk_run_failure("shutdown", "unknown", raw)


async def start_sdk_run(
    request: SubagentRequest,
    spec: SdkRunSpec,
    *,
    task_group: TaskGroup,
    on_error: ErrorSink | None = None,
    client_factory: ClientFactory = SdkClient,
    provider_name: str = "dsh-sdk",
) -> SdkRun:
    """Start one run from a resolved spec; return it once ``initialize`` succeeded (the ownership transfer).

    Args:
        request: the task; ``request.signal`` is the run's only cancellation channel, and its ``agent_options``
            override the spec's route.
        spec: the resolved command, cwd, env, route and bounds.
        task_group: owns the client's reader, drain and watcher tasks and the result task (the host's group).
        on_error: the error sink; receives each raw failure once.
        client_factory: builds the client from the resolved spec (a test seam).
        provider_name: recorded in the transcript's ``run/start``.

    Raises:
        StartAbortedError: the signal fired before or during the handshake (the client, if any, was closed).
        SdkRunFailure: spawn or handshake failed (``R(initialize, <category>)``; raw error on ``__cause__``).
        AggregateError: a startup failure or cancellation, and closing the client failed too.
    """
    if request.signal.cancelled:
        raise StartAbortedError(START_ABORTED_MESSAGE)
    warm = request.lease.warm if request.lease is not None else None
    client = (
        warm.client if isinstance(warm, SdkWarmChild) else client_factory(resolve_route(spec, request.agent_options))
    )
    return await SdkRun.start(
        request,
        client,
        task_group=task_group,
        on_error=on_error,
        provider_name=provider_name,
        max_output_bytes=spec.max_output_bytes,
    )
