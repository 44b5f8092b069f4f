"""Live children cost no thread each: the spawn hops to a worker thread and the exit is awaited on a pidfd."""

from __future__ import annotations

import threading
from contextlib import AsyncExitStack

import anyio
import pytest

from tests.process.test_managed import COLD_START_S, managed_child

# Live children held at once.
CHILDREN_HELD = 4


@pytest.mark.anyio
async def test_live_children_hold_no_thread_each_and_each_exit_is_observed() -> None:
    async with AsyncExitStack() as stack:
        first = await stack.enter_async_context(managed_child("exit_on_eof.py"))
        baseline = threading.active_count()  # the spawn's worker thread now exists
        handles = [first]
        for _ in range(CHILDREN_HELD - 1):
            handle = await stack.enter_async_context(managed_child("exit_on_eof.py"))
            handles.append(handle)
        # asyncio's ThreadedChildWatcher held one waitpid thread per live child here.
        assert threading.active_count() == baseline
        for handle in handles:
            await handle.close_stdin()
        with anyio.fail_after(COLD_START_S):
            outcomes = [await handle.wait_outcome() for handle in handles]
        assert all(outcome.exit_code == 0 for outcome in outcomes)
