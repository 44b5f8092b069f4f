"""``RunLifecycle``: the lifecycle every run owns, fed with its provider's plain callables.

A run listens to its caller-owned signal, races its handshake against a local cancel, publishes, settles its result
exactly once (a local cancel settles ``aborted`` with the partial output at once), releases its child exactly once
(startup rollback and dispose share the release) and disposes once, with one shared outcome. The release itself
(the child connection's teardown) is shielded and bounded; nothing here needs a shield of its own.
``settle_run_result`` never raises an ``Exception``: a local cancel settles ``aborted`` with no diagnostic and no
sink call, a raised attempt settles ``error`` (sink called once, contained), and a returned result is normalized.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Generator
from contextlib import contextmanager
from typing import Final, Generic, Literal, NoReturn, TypeAlias, TypeVar, final

import anyio
from anyio.abc import TaskGroup

from host._exceptions import AggregateError, StartAbortedError, SubagentHostError
from host._json import ContentBlock
from host.cancel import CancelSignal
from host.diagnostics import SubagentResult, limit_diagnostic
from host.run._attempt import notify_attempt
from host.run._contracts import SubagentRequest
from host.stream import ProviderKind, RunJournal, TranscriptEvent

__all__ = ["ErrorSink", "RunLifecycle", "call_error_sink", "new_run_id", "normalize_result", "settle_run_result"]

# Settlement logs under the logger it always used, so a logging setup for `host.diagnostics` keeps seeing it.
logger = logging.getLogger("host.diagnostics.settle")

# Bounds how long dispose() lets the published run's task finish (ACP: write `session/cancel`) before the release.
_RUN_TASK_STOP_TIMEOUT_S: Final = 1.0

FailureT = TypeVar("FailureT")


def _noop() -> None:
    pass


def new_run_id() -> str:
    """A fresh host-minted run id (``uuid4``), never the child's own session id."""
    return str(uuid.uuid4())


ErrorSink: TypeAlias = Callable[[BaseException, Literal["error"]], None]
"""Receives each raw failure of a run, with the stop-reason argument always ``"error"``."""


def call_error_sink(sink: ErrorSink | None, error: BaseException) -> None:
    """Report ``error`` to ``sink``; a sink that raises is swallowed with a debug log and changes nothing."""
    if sink is None:
        return
    try:
        sink(error, "error")
    except Exception:  # containment boundary: a broken sink never changes a result or a raised error
        logger.debug("subagent-host: error sink raised", exc_info=True)


def normalize_result(result: SubagentResult) -> SubagentResult:
    """Strip the diagnostic of a ``completed`` result; bound any other diagnostic to 4096 bytes."""
    if result.stop_reason == "completed":
        if result.diagnostic is None:
            return result
        return result.model_copy(update={"diagnostic": None})
    if result.diagnostic is None:
        return result
    return result.model_copy(update={"diagnostic": limit_diagnostic(result.diagnostic)})


async def settle_run_result(
    attempt: Callable[[], Awaitable[SubagentResult]],
    *,
    collect_output: Callable[[], list[ContentBlock]],
    collect_diagnostic: Callable[[], str | None] | None = None,
    cancelled: Callable[[], bool],
    on_error: ErrorSink | None,
    remove_listener: Callable[[], None],
) -> SubagentResult:
    """Await ``attempt`` and turn its outcome into the run's published result.

    Args:
        attempt: produces the provider's own result, or raises a raw error.
        collect_output: the output snapshot taken when the outcome was fixed (partial output survives).
        collect_diagnostic: the safe diagnostic of a raised attempt, if the provider has one.
        cancelled: whether the run was cancelled locally; a local cancel wins over anything the child did.
        on_error: the error sink, called once with a raw error of an attempt that raised without a local cancel.
        remove_listener: removes the run's cancel listener; called on every path.

    Returns:
        The settled result. Only cancellation of the awaiting task itself propagates.
    """
    try:
        try:
            result = await attempt()
        except Exception as exc:
            if cancelled():
                return _aborted(collect_output())
            call_error_sink(on_error, exc)
            diagnostic = collect_diagnostic() if collect_diagnostic is not None else None
            return SubagentResult(
                output=collect_output(),
                stop_reason="error",
                diagnostic=limit_diagnostic(diagnostic) if diagnostic else None,
            )
        if cancelled():
            return _aborted(collect_output())
        return normalize_result(result)
    finally:
        _remove_listener_contained(remove_listener)


def _aborted(output: list[ContentBlock]) -> SubagentResult:
    return SubagentResult(output=output, stop_reason="aborted")


def _remove_listener_contained(remove_listener: Callable[[], None]) -> None:
    try:
        remove_listener()
    except Exception:  # containment boundary: settlement never raises because of its own bookkeeping
        logger.debug("subagent-host: removing the cancel listener raised", exc_info=True)


@final
class RunLifecycle(Generic[FailureT]):
    """One run's shared state machine: listen, race startup, publish, settle once, release once, dispose once."""

    def __init__(
        self,
        request: SubagentRequest,
        *,
        kind: ProviderKind,
        provider_name: str,
        task_group: TaskGroup,
        on_error: ErrorSink | None,
        start_aborted_message: str,
        output: Callable[[], list[ContentBlock]],
        freeze: Callable[[], None],
        release: Callable[[], Awaitable[None]],
        release_failure: Callable[[Exception], SubagentHostError],
        report_interrupted_release: bool,
        on_local_cancel: Callable[[], None] = _noop,
        run_id: str | None = None,
    ) -> None:
        """Bind the run's shared state.

        Args:
            request: the task; its ``signal`` is the run's only cancellation channel.
            kind: recorded in the transcript's ``run/start``.
            provider_name: recorded in the transcript's ``run/start``.
            task_group: owns the published run's task (the host's group).
            on_error: the error sink; receives each raw failure once.
            start_aborted_message: the ``StartAbortedError`` text of a startup the signal interrupted.
            output: the output a settlement carries (the fold so far, frozen).
            freeze: fixes the outcome: no later update reaches the output or the stream. Idempotent.
            release: releases the child (its connection's teardown); called at most once.
            release_failure: reports a failed release to the sink and builds its safe form.
            report_interrupted_release: whether a failed release after the caller's own cancellation interrupted
                the startup goes to the error sink.
            on_local_cancel: sees the first local cancel, before the run settles ``aborted``.
            run_id: the host-minted run id (a fresh one by default).
        """
        self.id: Final = run_id if run_id is not None else new_run_id()
        self.journal: Final = RunJournal(self.id, provider_name, kind, request.on_frame)
        self.on_error: Final = on_error
        self._signal: CancelSignal = request.signal
        self._task_group = task_group
        self._start_aborted_message = start_aborted_message
        self._output = output
        self._freeze = freeze
        self._release = release
        self._release_failure = release_failure
        self._report_interrupted_release = report_interrupted_release
        self._on_local_cancel = on_local_cancel
        self.attempt_observer: Final = request.on_attempt  # told the handshake's facts by the run (before publication)
        self._published = False
        self._cancelled = False
        self._scope: anyio.CancelScope | None = None
        self._result: SubagentResult | None = None
        self._settled = anyio.Event()
        self._task_done = anyio.Event()
        self._remove_listener: Callable[[], None] = _noop
        self._release_done: anyio.Event | None = None
        self._release_error: Exception | None = None
        self._dispose_failure: SubagentHostError | None = None

    @property
    def published(self) -> bool:
        """Whether the run was handed to its caller."""
        return self._published

    @property
    def cancelled(self) -> bool:
        """Whether the run was cancelled locally (its signal fired, or it is being disposed)."""
        return self._cancelled

    @property
    def transcript(self) -> tuple[TranscriptEvent, ...]:
        """A snapshot of the run's transcript."""
        return self.journal.transcript

    @property
    def disposed(self) -> bool:
        """Whether the child was released (by ``dispose`` or a rollback)."""
        return self._release_done is not None and self._release_done.is_set()

    async def result(self) -> SubagentResult:
        """Wait for the settled result; never raises."""
        await self._settled.wait()
        assert self._result is not None
        return self._result

    # -- startup -----------------------------------------------------------------------------------------------

    def announce(self, run: object) -> None:
        """Tell the request's attempt observer the run id and the run, right before the child is spawned."""
        notify_attempt(self.attempt_observer, "announce", self.id, run)

    def start_failed(self) -> None:
        """Tell the attempt observer the start failed or was aborted (before the rollback teardown)."""
        notify_attempt(self.attempt_observer, "start_failed")

    async def start(
        self,
        handshake: Callable[[], Awaitable[FailureT | None]],
        *,
        startup_failure: Callable[[FailureT], Awaitable[SubagentHostError]],
        attempt: Callable[[], Awaitable[SubagentResult]],
        diagnostic: Callable[[], str | None],
        after_settle: Callable[[], Awaitable[None]] | None = None,
        name: str,
    ) -> None:
        """Race ``handshake`` against a local cancel; publish, or release the child once and raise.

        Args:
            handshake: the protocol handshake; returns ``None`` on success or the provider's failure value.
            startup_failure: turns that failure value into the safe error (reporting the raw one to the sink).
            attempt: the published attempt (runs in the run's task, interruptible by a local cancel).
            diagnostic: the safe diagnostic of an attempt that raised.
            after_settle: awaited by the run's task once the result settled.
            name: the run task's name.

        Raises:
            StartAbortedError: the signal fired before or during the handshake (the child was released).
            SubagentHostError: the safe startup failure (the child was released).
            AggregateError: a startup failure or the abort, and the release failed too.
        """
        try:
            self._listen()
            failure: FailureT | None = None
            with self.interruptible():
                failure = await handshake()
            if failure is None and not self._cancelled:
                self._published = True
                self.journal.publish()
                self._task_group.start_soon(self._run_task, attempt, diagnostic, after_settle, name=name)
                return
            self._remove_listener_once()
            if self._cancelled:
                await self._roll_back(None)
            assert failure is not None
            await self._roll_back(await startup_failure(failure))
        except anyio.get_cancelled_exc_class():
            # The caller's own cancellation interrupted the startup: the private child must not outlive it.
            self._remove_listener_once()
            self.start_failed()
            release_error: Exception | None = None
            with anyio.CancelScope(shield=True):
                release_error = await self._release_once()
            if release_error is not None and self._report_interrupted_release:
                call_error_sink(self.on_error, release_error)
            raise

    def _listen(self) -> None:
        """Attach the cancel listener; a signal that fired before it existed cancels at once."""
        self._remove_listener = self._signal.add_listener(self._on_cancel)
        if self._signal.cancelled:
            self._on_cancel(self._signal)

    @contextmanager
    def interruptible(self) -> Generator[None]:
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
        """Release the unpublished child once, then raise its startup failure (or the abort), with a failed release."""
        self.start_failed()
        release_error: Exception | None = None
        with anyio.CancelScope(shield=True):
            release_error = await self._release_once()
        if release_error is None:
            raise startup_failure if startup_failure is not None else StartAbortedError(self._start_aborted_message)
        release_failure = self._release_failure(release_error)
        raise AggregateError([release_failure] if startup_failure is None else [startup_failure, release_failure])

    # -- the published attempt ---------------------------------------------------------------------------------

    async def _run_task(
        self,
        attempt: Callable[[], Awaitable[SubagentResult]],
        diagnostic: Callable[[], str | None],
        after_settle: Callable[[], Awaitable[None]] | None,
    ) -> None:
        try:
            try:
                result = await settle_run_result(
                    attempt,
                    collect_output=self._output,
                    collect_diagnostic=diagnostic,
                    cancelled=lambda: self._cancelled,
                    on_error=self.on_error,
                    remove_listener=self._remove_listener_once,
                )
                self._settle(result, locally_cancelled=self._cancelled)
            finally:
                # Only reached unsettled when the host's task group itself is being cancelled.
                if self._result is None:
                    self._settle(SubagentResult(output=self._output(), stop_reason="aborted"), locally_cancelled=True)
            if after_settle is not None:
                await after_settle()
        finally:
            self._task_done.set()

    def _on_cancel(self, signal: CancelSignal) -> None:
        self._cancel_locally()

    def _cancel_locally(self) -> None:
        """Cancel once: interrupt the live scope and, once published, settle ``aborted`` with the partial output."""
        if self._cancelled:
            return
        self._on_local_cancel()
        self._cancelled = True
        if self._published and self._result is None:
            self._settle(SubagentResult(output=self._output(), stop_reason="aborted"), locally_cancelled=True)
        if self._scope is not None:
            self._scope.cancel()

    def _settle(self, result: SubagentResult, *, locally_cancelled: bool) -> None:
        if self._result is not None:
            return
        self._freeze()
        self._result = result
        self.journal.finish(result, locally_cancelled=locally_cancelled)
        self._settled.set()

    def _remove_listener_once(self) -> None:
        remove, self._remove_listener = self._remove_listener, _noop
        remove()

    # -- release and dispose -----------------------------------------------------------------------------------

    async def _release_once(self) -> Exception | None:
        """Release the child exactly once (startup rollback and dispose share it); return its raw error."""
        if self._release_done is None:
            self._release_done = anyio.Event()
            try:
                await self._release()
            except Exception as exc:
                self._release_error = exc
            finally:
                self._release_done.set()
        else:
            await self._release_done.wait()
        return self._release_error

    async def dispose(self) -> None:
        """Cancel locally, then release the child once; every call sees the same outcome.

        The release (the connection's teardown) is shielded; a disposer cancelled while the run's task finishes
        still starts it, so a child is never left behind.

        Raises:
            SubagentHostError: the safe form of a failed release (the raw error is its ``__cause__``).
        """
        self._remove_listener_once()
        self._cancel_locally()
        try:
            if self._published and not self._task_done.is_set():
                with anyio.move_on_after(_RUN_TASK_STOP_TIMEOUT_S):
                    await self._task_done.wait()
        finally:
            release_error = await self._release_once()
        if release_error is not None:
            if self._dispose_failure is None:
                self._dispose_failure = self._release_failure(release_error)
            raise self._dispose_failure
