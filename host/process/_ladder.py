"""The teardown ladder: EOF → bounded exit wait → SIGTERM/SIGKILL the tree → bounded reap → report.

It runs inside a cancellation shield and every rung is bounded, so a cancelled caller can neither leak a live
child nor hang on one. A failed or expired rung always escalates; the collected errors are reported once. Each
rung's grace is read as the rung starts, through the bound ``GraceCap`` if any (``host.process._graces``).
:class:`SharedTeardown` memoises one ladder run per child so rollback and dispose see the same outcome.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Final, cast

import anyio

from host._exceptions import AggregateError
from host.process._graces import eof_rung
from host.process._handle import ProcessHandle, SupportsAclose

__all__ = ["SharedTeardown", "climb_teardown_ladder", "run_teardown_ladder"]

logger = logging.getLogger(__name__)

# Slack on top of the EOF grace for the bounded exit wait, so a misbehaving handle cannot hang the ladder.
_EXIT_WAIT_SLACK_S: Final = 1.0


async def run_teardown_ladder(handle: ProcessHandle, *, eof_grace_ms: float, aggregate_message: str) -> None:
    """Stop ``handle``'s tree, gracefully first (docs/behaviour.md#process-teardown-ladder), then release its pipes.

    Args:
        handle: The managed child (or a test wrapper of one).
        eof_grace_ms: How long the child may take to exit after its stdin closed.
        aggregate_message: The message of the ``AggregateError`` raised when several rungs failed.

    Raises:
        Exception: The single rung error, as is.
        AggregateError: Several rungs failed; ``errors`` holds them in rung order.
    """
    with anyio.CancelScope(shield=True):
        await climb_teardown_ladder(handle, eof_grace_ms=eof_grace_ms, aggregate_message=aggregate_message)


async def climb_teardown_ladder(handle: ProcessHandle, *, eof_grace_ms: float, aggregate_message: str) -> None:
    """:func:`run_teardown_ladder` without its own shield, for a caller whose teardown is already shielded.

    Raises:
        Exception | AggregateError: as for :func:`run_teardown_ladder`.
    """
    errors: list[Exception] = []
    try:
        await _climb(handle, eof_grace_ms, errors)
    finally:
        await _release(handle)
    if len(errors) == 1:
        raise errors[0]
    if errors:
        raise AggregateError(errors, aggregate_message)


async def _climb(handle: ProcessHandle, eof_grace_ms: float, errors: list[Exception]) -> None:
    try:
        handle.snapshot_descendants()
    except Exception as exc:
        errors.append(exc)
    try:
        await handle.close_stdin()
    except Exception as exc:
        errors.append(exc)
    try:
        # A bound, engaged GraceCap may shorten the grace, or end the wait early.
        with eof_rung(eof_grace_ms) as grace_ms, anyio.move_on_after(max(grace_ms, 0.0) / 1000 + _EXIT_WAIT_SLACK_S):
            if await handle.wait_exit(grace_ms):
                return
    except Exception as exc:
        errors.append(exc)
    try:
        await handle.terminate()
    except Exception as exc:
        errors.append(exc)
    try:
        await handle.wait_reaped()
    except Exception as exc:
        errors.append(exc)


async def _release(handle: ProcessHandle) -> None:
    """Close the pipes (stdout included) so nothing is left open, whatever the ladder's outcome."""
    try:
        # What isinstance(handle, SupportsAclose) tests, without the runtime-protocol check's cost on Python 3.11.
        if getattr(handle, "aclose", None) is not None:
            await cast("SupportsAclose", handle).aclose()
        else:
            await handle.stdin.aclose()
            await handle.stdout.aclose()
    except Exception:  # containment: releasing pipes must not mask the ladder's own outcome
        logger.debug("releasing the pipes of child %d failed", handle.pid, exc_info=True)


class SharedTeardown:
    """One memoised teardown per child: the first :meth:`run` starts it, every caller sees the same outcome."""

    def __init__(self, factory: Callable[[], Awaitable[None]]) -> None:
        """Remember ``factory`` (typically a ``run_teardown_ladder`` call) without starting it.

        Args:
            factory: Starts the teardown; called at most once.
        """
        self._factory = factory
        self._done: anyio.Event | None = None
        self._error: BaseException | None = None

    @property
    def finished(self) -> bool:
        """Whether the teardown has completed (successfully or not)."""
        return self._done is not None and self._done.is_set()

    async def run(self) -> None:
        """Run the teardown once, or wait for the run in progress; re-raise its error (the same object).

        The run itself is shielded: a caller cancelled while waiting leaves it to finish for the others.
        """
        if self._done is None:
            self._done = anyio.Event()
            try:
                with anyio.CancelScope(shield=True):
                    await self._factory()
            except BaseException as exc:
                self._error = exc
            finally:
                self._done.set()
        else:
            await self._done.wait()
        if self._error is not None:
            raise self._error
