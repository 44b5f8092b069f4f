from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from anyio.abc import ByteReceiveStream, ByteSendStream

from host._exceptions import AggregateError
from host.process import (
    ManagedProcess,
    ProcessHandle,
    ProcessOutcome,
    SharedTeardown,
    build_child_env,
    run_teardown_ladder,
    spawn_managed,
)
from tests.conftest import PYTHON

CHILDREN = Path(__file__).parent / "children"
GRACE_MS = 200
# Bound for waits that include a real interpreter cold start (slow on a loaded 2-core runner).
COLD_START_S = 10
SDK_TEARDOWN_FAILED = "DSH SDK runtime teardown failed"


class FailingWaits(ProcessHandle):
    """Delegates to a real handle; ``wait_exit`` raises at once and ``wait_reaped`` raises after the real reap."""

    def __init__(self, inner: ManagedProcess, *, exit_error: Exception | None, reap_error: Exception | None) -> None:
        self._inner = inner
        self._exit_error = exit_error
        self._reap_error = reap_error

    @property
    def pid(self) -> int:
        return self._inner.pid

    @property
    def stdin(self) -> ByteSendStream:
        return self._inner.stdin

    @property
    def stdout(self) -> ByteReceiveStream:
        return self._inner.stdout

    @property
    def outcome(self) -> ProcessOutcome | None:
        return self._inner.outcome

    async def wait_outcome(self) -> ProcessOutcome:
        return await self._inner.wait_outcome()

    async def wait_exit(self, bound_ms: float) -> bool:
        if self._exit_error is not None:
            raise self._exit_error
        return await self._inner.wait_exit(bound_ms)

    async def terminate(self) -> None:
        await self._inner.terminate()

    async def wait_reaped(self) -> None:
        await self._inner.wait_reaped()
        if self._reap_error is not None:
            raise self._reap_error

    async def close_stdin(self) -> None:
        await self._inner.close_stdin()

    def snapshot_descendants(self) -> None:
        self._inner.snapshot_descendants()

    def tree_gone(self) -> bool:
        return self._inner.tree_gone()

    async def aclose(self) -> None:
        await self._inner.aclose()


@asynccontextmanager
async def eof_deaf_child() -> AsyncGenerator[ManagedProcess]:
    async with anyio.create_task_group() as tg:
        handle = await spawn_managed(
            [PYTHON, str(CHILDREN / "eof_deaf.py")],
            cwd=str(CHILDREN),
            env=build_child_env({}),
            task_group=tg,
            grace_ms=GRACE_MS,
        )
        try:
            yield handle
        finally:
            await run_teardown_ladder(handle, eof_grace_ms=50, aggregate_message=SDK_TEARDOWN_FAILED)


@pytest.mark.anyio
async def test_several_rung_failures_aggregate_under_the_given_message_and_the_ladder_still_escalates() -> None:
    exit_error = RuntimeError("exit wait failed")
    reap_error = RuntimeError("final exit wait failed")
    async with eof_deaf_child() as handle:
        wrapper = FailingWaits(handle, exit_error=exit_error, reap_error=reap_error)
        with anyio.fail_after(COLD_START_S), pytest.raises(AggregateError) as caught:
            await run_teardown_ladder(wrapper, eof_grace_ms=5000, aggregate_message=SDK_TEARDOWN_FAILED)
        assert str(caught.value) == "DSH SDK runtime teardown failed"
        assert caught.value.errors == (exit_error, reap_error)
        assert caught.value.errors[0] is exit_error and caught.value.errors[1] is reap_error
        assert handle.outcome == ProcessOutcome(exit_code=None, signal="SIGTERM")


@pytest.mark.anyio
async def test_a_single_rung_failure_is_re_raised_as_is() -> None:
    reap_error = RuntimeError("final exit wait failed")
    async with eof_deaf_child() as handle:
        wrapper = FailingWaits(handle, exit_error=None, reap_error=reap_error)
        with anyio.fail_after(COLD_START_S), pytest.raises(RuntimeError) as caught:
            await run_teardown_ladder(wrapper, eof_grace_ms=50, aggregate_message=SDK_TEARDOWN_FAILED)
        assert caught.value is reap_error
        assert handle.outcome == ProcessOutcome(exit_code=None, signal="SIGTERM")


@pytest.mark.anyio
async def test_shared_teardown_runs_once_and_every_caller_sees_the_same_error_object() -> None:
    calls = 0
    release = anyio.Event()
    error = RuntimeError("teardown failed")
    seen: list[BaseException] = []

    async def teardown() -> None:
        nonlocal calls
        calls += 1
        await release.wait()
        raise error

    shared = SharedTeardown(teardown)

    async def caller() -> None:
        try:
            await shared.run()
        except RuntimeError as exc:
            seen.append(exc)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(caller)
            await anyio.wait_all_tasks_blocked()
            assert calls == 1 and not shared.finished
            release.set()
        await caller()
    assert calls == 1
    assert shared.finished
    assert len(seen) == 4
    assert all(exc is error for exc in seen)


@pytest.mark.anyio
async def test_a_cancelled_waiter_does_not_cancel_the_shared_teardown_for_the_others() -> None:
    release = anyio.Event()
    finished: list[str] = []

    async def teardown() -> None:
        await release.wait()
        finished.append("teardown")

    shared = SharedTeardown(teardown)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(shared.run)
            await anyio.wait_all_tasks_blocked()
            with anyio.CancelScope() as waiter:
                waiter.cancel()
                await shared.run()
            assert waiter.cancelled_caught
            release.set()
        await shared.run()
    assert finished == ["teardown"]


@pytest.mark.anyio
async def test_shared_ladder_tears_a_real_child_down_once_for_concurrent_callers() -> None:
    runs = 0
    async with eof_deaf_child() as handle:

        async def ladder() -> None:
            nonlocal runs
            runs += 1
            await run_teardown_ladder(handle, eof_grace_ms=50, aggregate_message=SDK_TEARDOWN_FAILED)

        shared = SharedTeardown(ladder)
        with anyio.fail_after(COLD_START_S):
            async with anyio.create_task_group() as tg:
                tg.start_soon(shared.run)
                tg.start_soon(shared.run)
            await shared.run()
        assert runs == 1
        assert handle.outcome == ProcessOutcome(exit_code=None, signal="SIGTERM")
