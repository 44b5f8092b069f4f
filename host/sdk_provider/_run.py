"""One DSH SDK run: handshake (raced against local cancel) → publish → receipt-gated session run → settle → dispose.

``start_sdk_run`` returns only a published run; a startup failure or cancellation closes the private client exactly
once before raising a safe error (§5.8). A published run's ``result()`` never raises; ``dispose()`` cancels locally,
closes the client once (shutdown + ladder) and fails only as ``R(shutdown, unknown)``. Raw errors reach only the
error sink and ``__cause__``.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable, Sequence
from typing import Final, Protocol

import anyio
from anyio.abc import TaskGroup

from host._exceptions import AggregateError, SdkRunFailure, StartAbortedError
from host._json import ContentBlock
from host._run import AgentOptions, SubagentRequest, SubagentRun
from host.cancel import CancelSignal
from host.diagnostics import (
    ErrorSink,
    SdkCategory,
    SubagentResult,
    call_error_sink,
    sdk_failure_line,
    sdk_run_failure,
    settle_run_result,
)
from host.sdk_provider._mapping import OutputFold, classify_error, result_of_events
from host.sdk_provider.client import (
    NotificationObserver,
    SdkClient,
    SdkRunSpec,
    ServerInfo,
    SessionNotification,
    SessionRunOutcome,
)
from host.stream import RunJournal, SdkChunkMapper, TranscriptEvent

__all__ = ["START_ABORTED_MESSAGE", "ClientFactory", "SdkClientLike", "SdkRun", "resolve_route", "start_sdk_run"]

logger = logging.getLogger(__name__)

START_ABORTED_MESSAGE: Final = "subagent request was aborted before the SDK child started"
"""``StartAbortedError`` text: pre-aborted, or cancelled during the handshake (no ``subagent-dsh-sdk:`` prefix)."""

# Bounds how long dispose() waits for the result task to notice the local cancel before closing the client.
_RESULT_TASK_STOP_TIMEOUT_S: Final = 1.0


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


ClientFactory = Callable[[SdkRunSpec], SdkClientLike]
"""Builds the run's client from its resolved spec (``SdkClient`` unless a test wraps it)."""


def resolve_route(spec: SdkRunSpec, options: AgentOptions | None) -> SdkRunSpec:
    """Apply a request's ``agent_options`` over the spec's route (sdk-provider.md §5.2); each run gets its own."""
    if options is None:
        return spec
    return dataclasses.replace(
        spec,
        provider=options.provider if options.provider is not None else spec.provider,
        model=options.model if options.model is not None else spec.model,
        reasoning_effort=options.reasoning_effort if options.reasoning_effort is not None else spec.reasoning_effort,
        max_tokens=options.max_tokens if options.max_tokens is not None else spec.max_tokens,
    )


def _noop() -> None:
    pass


class SdkRun(SubagentRun):
    """The state of one run: its client, fold, stream journal, cancelled flag and settlement."""

    def __init__(
        self,
        *,
        run_id: str,
        request: SubagentRequest,
        client: SdkClientLike,
        task_group: TaskGroup,
        on_error: ErrorSink | None,
        provider_name: str,
    ) -> None:
        self._id = run_id
        self._signal: CancelSignal = request.signal
        self._prompt = request.prompt
        self._client = client
        self._task_group = task_group
        self._on_error = on_error
        self._session_id = "session-" + uuid.uuid4().hex
        self._journal = RunJournal(run_id, provider_name, "dsh-sdk", request.on_frame)
        self._mapper = SdkChunkMapper()
        self._fold = OutputFold()
        self._failure_category: SdkCategory = "unknown"
        self._published = False
        self._cancelled = False
        self._startup_scope: anyio.CancelScope | None = None
        self._attempt_scope: anyio.CancelScope | None = None
        self._result: SubagentResult | None = None
        self._settled = anyio.Event()
        self._result_task_done = anyio.Event()
        self._remove_listener: Callable[[], None] = _noop
        self._close_done: anyio.Event | None = None
        self._close_error: Exception | None = None
        self._dispose_done: anyio.Event | None = None
        self._dispose_error: SdkRunFailure | None = None

    # -- SubagentRun -------------------------------------------------------------------------------------------

    @property
    def id(self) -> str:
        """The host-minted run id (never the child's session id)."""
        return self._id

    @property
    def transcript(self) -> tuple[TranscriptEvent, ...]:
        """A snapshot of the run's transcript."""
        return self._journal.transcript

    @property
    def disposed(self) -> bool:
        """Whether ``dispose()`` has completed."""
        return self._dispose_done is not None and self._dispose_done.is_set()

    async def result(self) -> SubagentResult:
        """Wait for the settled result; never raises."""
        await self._settled.wait()
        assert self._result is not None
        return self._result

    async def dispose(self) -> None:
        """Cancel locally, then close the client once; every call sees the same outcome.

        Raises:
            SdkRunFailure: closing the client failed (``R(shutdown, unknown)``); the raw error is ``__cause__``.
        """
        if self._dispose_done is None:
            self._dispose_done = anyio.Event()
            try:
                with anyio.CancelScope(shield=True):
                    self._dispose_error = await self._dispose_once()
            finally:
                self._dispose_done.set()
        else:
            await self._dispose_done.wait()
        if self._dispose_error is not None:
            raise self._dispose_error

    # -- startup -----------------------------------------------------------------------------------------------

    async def start_up(self) -> None:
        """Race the handshake against local cancel; publish, or close the client once and raise (§5.1, §5.8)."""
        self._remove_listener = self._signal.add_listener(self._on_cancel)
        if self._signal.cancelled:  # the signal may have fired before the listener existed
            self._on_cancel(self._signal)
        failure: Exception | None = None
        cancelled_first = False
        with anyio.CancelScope() as scope:
            self._startup_scope = scope
            if self._cancelled:
                scope.cancel()
            try:
                await self._client.start(self._task_group)
            except Exception as exc:
                # The first to settle decides: a failure that settled before any cancel is authoritative.
                failure, cancelled_first = exc, self._cancelled
        self._startup_scope = None
        cancelled = cancelled_first or (failure is None and (self._cancelled or self._signal.cancelled))
        if failure is None and not cancelled:
            self._publish()
            return
        self._remove_listener_once()
        if cancelled:
            close_error = await self._close_client()
            if close_error is None:
                raise StartAbortedError(START_ABORTED_MESSAGE)
            raise AggregateError([self._shutdown_failure(close_error)])
        assert failure is not None
        call_error_sink(self._on_error, failure)
        startup_failure = sdk_run_failure("initialize", classify_error(failure), failure)
        close_error = await self._close_client()
        if close_error is None:
            raise startup_failure
        raise AggregateError([startup_failure, self._shutdown_failure(close_error)])

    async def roll_back_interrupted_start(self) -> None:
        """Close the private client after ``start_up`` was interrupted by the caller's own cancellation."""
        self._remove_listener_once()
        close_error: Exception | None = None
        with anyio.CancelScope(shield=True):
            close_error = await self._close_client()
        if close_error is not None:
            call_error_sink(self._on_error, close_error)

    def _publish(self) -> None:
        self._published = True
        self._journal.publish()
        self._task_group.start_soon(self._drive, name=f"DSH SDK session run {self._id}")

    # -- the published attempt ---------------------------------------------------------------------------------

    async def _drive(self) -> None:
        try:
            result = await settle_run_result(
                self._attempt,
                collect_output=self._fold.output,
                collect_diagnostic=lambda: sdk_failure_line("session-run", self._failure_category),
                cancelled=lambda: self._cancelled,
                on_error=self._on_error,
                remove_listener=self._remove_listener_once,
            )
            self._settle(result, locally_cancelled=self._cancelled)
        finally:
            # Only reached unsettled when the host's task group itself is being cancelled.
            self._settle(SubagentResult(output=self._fold.output(), stop_reason="aborted"), locally_cancelled=True)
            self._result_task_done.set()

    async def _attempt(self) -> SubagentResult:
        with anyio.CancelScope() as scope:
            self._attempt_scope = scope
            if self._cancelled:
                scope.cancel()
            try:
                outcome = await self._client.run(self._session_id, self._prompt, on_notification=self._observe)
            except Exception as exc:
                self._freeze()
                self._failure_category = classify_error(exc)
                raise
            self._freeze()
            stop_reason, diagnostic = result_of_events(outcome.events)
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
            self._fold.observe(event)
            for chunk in self._mapper.map_event(event):
                self._journal.chunk(chunk)
        elif params.get("status") == "idle":
            self._freeze()  # the outcome is fixed at the root idle

    def _on_cancel(self, signal: CancelSignal) -> None:
        self._local_cancel()

    def _local_cancel(self) -> None:
        if self._cancelled:
            return
        self._cancelled = True
        if self._startup_scope is not None:
            self._startup_scope.cancel()
        if not self._published:
            return
        self._settle(SubagentResult(output=self._fold.output(), stop_reason="aborted"), locally_cancelled=True)
        if self._attempt_scope is not None:
            self._attempt_scope.cancel()

    def _freeze(self) -> None:
        self._fold.freeze()
        self._journal.freeze()

    def _settle(self, result: SubagentResult, *, locally_cancelled: bool) -> None:
        if self._result is not None:
            return
        self._freeze()
        self._result = result
        self._journal.finish(result, locally_cancelled=locally_cancelled)
        self._settled.set()

    def _remove_listener_once(self) -> None:
        remove, self._remove_listener = self._remove_listener, _noop
        remove()

    # -- teardown ----------------------------------------------------------------------------------------------

    async def _dispose_once(self) -> SdkRunFailure | None:
        self._remove_listener_once()
        self._local_cancel()
        if self._published:
            with anyio.move_on_after(_RESULT_TASK_STOP_TIMEOUT_S):
                await self._result_task_done.wait()
        close_error = await self._close_client()
        return self._shutdown_failure(close_error) if close_error is not None else None

    async def _close_client(self) -> Exception | None:
        """Close the client exactly once (startup rollback and dispose share it); return its raw error."""
        if self._close_done is None:
            self._close_done = anyio.Event()
            with anyio.CancelScope(shield=True):
                try:
                    await self._client.aclose()
                except Exception as exc:
                    self._close_error = exc
                finally:
                    self._close_done.set()
        else:
            await self._close_done.wait()
        return self._close_error

    def _shutdown_failure(self, raw: Exception) -> SdkRunFailure:
        """Report a close failure to the sink and build its safe form ``R(shutdown, unknown)``."""
        call_error_sink(self._on_error, raw)
        return sdk_run_failure("shutdown", "unknown", raw)


async def start_sdk_run(
    request: SubagentRequest,
    spec: SdkRunSpec,
    *,
    task_group: TaskGroup,
    on_error: ErrorSink | None = None,
    client_factory: ClientFactory = SdkClient,
    provider_name: str = "dsh-sdk",
) -> SubagentRun:
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
    run_id = str(uuid.uuid4())
    client = client_factory(resolve_route(spec, request.agent_options))
    run = SdkRun(
        run_id=run_id,
        request=request,
        client=client,
        task_group=task_group,
        on_error=on_error,
        provider_name=provider_name,
    )
    try:
        await run.start_up()
    except anyio.get_cancelled_exc_class():
        await run.roll_back_interrupted_start()
        raise
    return run
