"""Deadlines as cancel signals (docs/behaviour.md#registry-deadline).

``deadline`` yields a signal that cancels on the first of its upstream or its own timer; the timer task lives in
a task group owned by the ``async with`` block, so leaving the block cancels the timer and no timeout fires after.
``timeout_of`` reads back whose timer fired, scoped by code so nested deadlines stay distinguishable.
"""

from __future__ import annotations

import math
from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Final

import anyio

from host._json import format_ms
from host.cancel._signal import CancelController, CancelSignal

__all__ = ["MAX_TIMER_DELAY_MS", "TimeoutReason", "deadline", "timeout_of"]

MAX_TIMER_DELAY_MS: Final = 2147483647
"""The largest timer delay accepted, in milliseconds (the reference's 32-bit timer bound)."""

_DEADLINE_RANGE_MESSAGE: Final = (
    f"deadline timeout_ms must be a positive finite number no greater than {MAX_TIMER_DELAY_MS}"
)


class TimeoutReason(Exception):
    """The reason a deadline's own timer puts on its signal; ``str()`` is ``<code> after <ms>ms``."""

    def __init__(self, code: str, timeout_ms: float) -> None:
        super().__init__(f"{code} after {format_ms(timeout_ms)}ms")
        self.code = code
        self.timeout_ms = timeout_ms


def deadline(upstream: CancelSignal | None, timeout_ms: float, code: str) -> AbstractAsyncContextManager[CancelSignal]:
    """Derive a signal that also cancels ``timeout_ms`` after entry, with reason ``TimeoutReason(code, timeout_ms)``.

    ``timeout_ms <= 0`` arms no timer and yields ``upstream`` itself (or a never-cancelling signal without one).

    Raises:
        ValueError: ``timeout_ms`` is NaN, infinite or above ``MAX_TIMER_DELAY_MS`` (raised at the call).
    """
    if not math.isfinite(timeout_ms) or timeout_ms > MAX_TIMER_DELAY_MS:
        raise ValueError(_DEADLINE_RANGE_MESSAGE)
    return _deadline(upstream, timeout_ms, code)


@asynccontextmanager
async def _deadline(upstream: CancelSignal | None, timeout_ms: float, code: str) -> AsyncGenerator[CancelSignal]:
    if timeout_ms <= 0:
        yield upstream if upstream is not None else CancelSignal()
        return
    controller = CancelController()
    remove_upstream_listener = _noop
    if upstream is not None:
        if upstream.cancelled:
            controller.cancel(upstream.reason)
        else:
            remove_upstream_listener = upstream.add_listener(lambda source: controller.cancel(source.reason))
    body_error: Exception | None = None
    async with anyio.create_task_group() as task_group:
        if not controller.signal.cancelled:
            task_group.start_soon(_fire_after, controller, timeout_ms, code)
        try:
            yield controller.signal
        except Exception as exc:
            # Carried out of the task group so the block's own error is not wrapped in an ExceptionGroup.
            body_error = exc
        finally:
            remove_upstream_listener()
            task_group.cancel_scope.cancel()
    if body_error is not None:
        raise body_error


async def _fire_after(controller: CancelController, timeout_ms: float, code: str) -> None:
    await anyio.sleep(timeout_ms / 1000)
    controller.cancel(TimeoutReason(code, timeout_ms))


def timeout_of(signal: CancelSignal, code: str | None = None) -> TimeoutReason | None:
    """Return the signal's ``TimeoutReason`` (matching ``code`` exactly when given), else ``None``."""
    reason = signal.reason
    if isinstance(reason, TimeoutReason) and (code is None or reason.code == code):
        return reason
    return None


def _noop() -> None:
    return None
