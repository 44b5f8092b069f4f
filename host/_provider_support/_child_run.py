"""``ChildRun``: the run-handle lifecycle both providers share, around each one's own handshake and attempt.

A run listens to its caller-owned signal, races its startup against a local cancel, publishes, settles its result
exactly once (a local cancel settles ``aborted`` with the partial output at once), releases its child exactly once
(startup rollback and dispose share the release) and disposes once, shielded, with one shared outcome.
"""

from __future__ import annotations

import uuid
from abc import abstractmethod
from collections.abc import Awaitable, Callable, Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Final, NoReturn

import anyio
from anyio.abc import TaskGroup

from host._exceptions import AggregateError, StartAbortedError, SubagentHostError
from host._json import ContentBlock
from host._run import SubagentRequest, SubagentRun
from host.cancel import CancelSignal
from host.diagnostics import ErrorSink, SubagentResult, settle_run_result
from host.process import SharedTeardown
from host.stream import ProviderKind, RunJournal, TranscriptEvent

__all__ = ["ChildRun", "RunContext"]

# Bounds how long dispose() lets the published run's task finish (ACP: write `session/cancel`) before the release.
_RUN_TASK_STOP_TIMEOUT_S: Final = 1.0


def _noop() -> None:
    pass


@dataclass(frozen=True, slots=True, kw_only=True)
class RunContext:
    """What a provider's run entry hands each new run."""

    request: SubagentRequest
    """The task; its ``signal`` is the run's only cancellation channel."""
    task_group: TaskGroup
    """Owns the run's background tasks (the host's group)."""
    on_error: ErrorSink | None
    """The error sink; receives each raw failure once."""
    provider_name: str
    """Recorded in the transcript's ``run/start``."""
    run_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    """The host-minted run id (a fresh ``uuid4``, never the child's session id)."""


class ChildRun(SubagentRun):
    """One run of a fresh child: the ``SubagentRun`` surface and the lifecycle state both providers share.

    A provider's run supplies what its protocol makes different: ``start_up`` (its handshake race and failure
    facts, ending in ``_publish`` or ``_roll_back``), ``roll_back_interrupted_start``, ``_output`` (the output a
    settlement carries), ``_freeze`` (fixing the outcome) and ``_release_failure`` (the safe form of a failed release).
    """

    def __init__(
        self,
        context: RunContext,
        *,
        kind: ProviderKind,
        release: Callable[[], Awaitable[None]],
        start_aborted_message: str,
    ) -> None:
        """Bind the run's shared state.

        Args:
            context: the run id, request, task group, error sink and provider name.
            kind: the provider kind recorded in the transcript's ``run/start``.
            release: releases the child (ladder or client close); called at most once, shielded.
            start_aborted_message: the ``StartAbortedError`` text of a startup the signal interrupted.
        """
        request = context.request
        self._id = context.run_id
        self._signal: CancelSignal = request.signal
        self._journal = RunJournal(context.run_id, context.provider_name, kind, request.on_frame)
        self._task_group = context.task_group
        self._on_error = context.on_error
        self._start_aborted_message = start_aborted_message
        self._published = False
        self._cancelled = False
        self._scope: anyio.CancelScope | None = None
        self._result: SubagentResult | None = None
        self._settled = anyio.Event()
        self._task_done = anyio.Event()
        self._remove_listener: Callable[[], None] = _noop
        self._release = SharedTeardown(release)
        self._disposal = SharedTeardown(self._dispose_once)

    # -- what each provider supplies ---------------------------------------------------------------------------

    @abstractmethod
    async def start_up(self) -> None:
        """Race the handshake against local cancel; publish, or release the child once and raise."""

    @abstractmethod
    async def roll_back_interrupted_start(self) -> None:
        """Release the private child after ``start_up`` was interrupted by the caller's own cancellation."""

    @abstractmethod
    def _output(self) -> list[ContentBlock]:
        """The output a settlement carries: the fold so far, frozen."""

    @abstractmethod
    def _freeze(self) -> None:
        """Fix the outcome: no later update reaches the output or the stream. Idempotent."""

    @abstractmethod
    def _release_failure(self, raw: Exception) -> SubagentHostError:
        """Report a failed release to the sink and build its safe form."""

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
        return self._disposal.finished

    async def result(self) -> SubagentResult:
        """Wait for the settled result; never raises."""
        await self._settled.wait()
        assert self._result is not None
        return self._result

    async def dispose(self) -> None:
        """Cancel locally, then release the child once; every call sees the same outcome.

        Raises:
            AcpRunFailure | SdkRunFailure: the release failed; the raw error is its ``__cause__``.
        """
        await self._disposal.run()

    # -- startup -----------------------------------------------------------------------------------------------

    async def open(self) -> None:
        """Run ``start_up``; if the caller's own cancellation interrupts it, roll the child back and re-raise."""
        try:
            await self.start_up()
        except anyio.get_cancelled_exc_class():
            await self.roll_back_interrupted_start()
            raise

    def _listen(self) -> None:
        """Attach the cancel listener; a signal that fired before it existed cancels at once."""
        self._remove_listener = self._signal.add_listener(self._on_cancel)
        if self._signal.cancelled:
            self._on_cancel(self._signal)

    @contextmanager
    def _interruptible(self) -> Generator[None]:
        """A scope a local cancel interrupts (the startup race or the published attempt); entered cancelled if due."""
        with anyio.CancelScope() as scope:
            self._scope = scope
            if self._cancelled:
                scope.cancel()
            try:
                yield
            finally:
                self._scope = None

    async def _roll_back(self, startup_failure: SubagentHostError | None) -> NoReturn:
        """Release the unpublished child once, then raise its startup failure (or the abort), with a failed release.

        The caller has already removed the cancel listener.

        Raises:
            StartAbortedError: no startup failure and the release succeeded (the signal won).
            SubagentHostError: ``startup_failure`` itself, when the release succeeded.
            AggregateError: the release failed too (after ``startup_failure``, if any).
        """
        release_error = await self._release_once()
        if release_error is None:
            raise startup_failure if startup_failure is not None else StartAbortedError(self._start_aborted_message)
        release_failure = self._release_failure(release_error)
        raise AggregateError([release_failure] if startup_failure is None else [startup_failure, release_failure])

    def _publish(self, drive: Callable[[], Awaitable[None]], *, name: str) -> None:
        """Publish the run and start its task (``drive``), which owns the attempt until the run settles."""
        self._published = True
        self._journal.publish()
        self._task_group.start_soon(self._run_task, drive, name=name)

    # -- the published attempt ---------------------------------------------------------------------------------

    async def _run_task(self, drive: Callable[[], Awaitable[None]]) -> None:
        try:
            await drive()
        finally:
            self._task_done.set()

    async def _settle_attempt(
        self, attempt: Callable[[], Awaitable[SubagentResult]], *, collect_diagnostic: Callable[[], str | None]
    ) -> None:
        """Await the attempt and settle its outcome (never raises but the task group's own cancellation)."""
        try:
            result = await settle_run_result(
                attempt,
                collect_output=self._output,
                collect_diagnostic=collect_diagnostic,
                cancelled=lambda: self._cancelled,
                on_error=self._on_error,
                remove_listener=self._remove_listener_once,
            )
            self._settle(result, locally_cancelled=self._cancelled)
        finally:
            # Only reached unsettled when the host's task group itself is being cancelled.
            self._settle(SubagentResult(output=self._output(), stop_reason="aborted"), locally_cancelled=True)

    def _on_cancel(self, signal: CancelSignal) -> None:
        self._local_cancel()

    def _local_cancel(self) -> None:
        """Cancel once: interrupt the live scope and, once published, settle ``aborted`` with the partial output."""
        if self._cancelled:
            return
        self._cancelled = True
        if self._published:
            self._settle(SubagentResult(output=self._output(), stop_reason="aborted"), locally_cancelled=True)
        if self._scope is not None:
            self._scope.cancel()

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

    # -- release and dispose -----------------------------------------------------------------------------------

    async def _release_once(self) -> Exception | None:
        """Release the child exactly once (startup rollback and dispose share it); return its raw error."""
        try:
            await self._release.run()
        except Exception as exc:
            return exc
        return None

    async def _dispose_once(self) -> None:
        self._remove_listener_once()
        self._local_cancel()
        if self._published:
            with anyio.move_on_after(_RUN_TASK_STOP_TIMEOUT_S):
                await self._task_done.wait()
        release_error = await self._release_once()
        if release_error is not None:
            raise self._release_failure(release_error)
