"""``GraceCap``: no effect until engaged; once engaged a starting rung gets ``min(configured, cap)`` and a waiting
rung ends ``cap`` after it began; ``cut_eof`` ends EOF rungs (now and later) but never a SIGTERM rung. Unbound, the
rungs are exactly the configured graces."""

from __future__ import annotations

import anyio
import pytest

from host.process import GraceCap, bind_grace_cap, term_grace
from host.process._graces import eof_rung, term_rung

pytestmark = pytest.mark.anyio

_BOUND_S = 5.0


async def waited_in(rung: str, configured_ms: float, sleep_s: float) -> tuple[float, float]:
    """(the rung's yielded grace in ms, seconds the block ran before it ended or was cut)."""
    enter = eof_rung if rung == "eof" else term_rung
    started = anyio.current_time()
    with enter(configured_ms) as grace_ms:
        await anyio.sleep(sleep_s)
    return grace_ms, anyio.current_time() - started


async def test_unbound_and_unengaged_rungs_use_the_configured_grace() -> None:
    with anyio.fail_after(_BOUND_S):
        unbound = await waited_in("term", 3000, 0.01)
        assert term_grace(3000) == 3000
        with bind_grace_cap(GraceCap(eof_ms=500, term_ms=1000)):
            unengaged = await waited_in("eof", 6000, 0.01)
            assert term_grace(3000) == 3000
    assert unbound[0] == 3000 and unengaged[0] == 6000


async def test_once_engaged_a_starting_rung_gets_the_smaller_grace() -> None:
    cap = GraceCap(eof_ms=500, term_ms=1000)
    with anyio.fail_after(_BOUND_S), bind_grace_cap(cap):
        cap.engage()
        eof = await waited_in("eof", 6000, 0.01)
        term = await waited_in("term", 300, 0.01)
        reap = term_grace(3000)
    assert (eof[0], term[0], reap) == (500, 300, 1000)


async def test_engaging_cuts_a_waiting_rung_to_the_cap_after_its_start() -> None:
    cap = GraceCap(eof_ms=500, term_ms=100)
    result: list[tuple[float, float]] = []
    with anyio.fail_after(_BOUND_S), bind_grace_cap(cap):
        async with anyio.create_task_group() as group:

            async def wait_in_term() -> None:
                result.append(await waited_in("term", 3000, 3.0))

            group.start_soon(wait_in_term)
            await anyio.wait_all_tasks_blocked()  # the rungs are entered and waiting
            cap.engage()
    ((grace_ms, ran_s),) = result
    assert grace_ms == 3000  # the wait began uncapped
    assert 0.1 <= ran_s < 1.0


async def test_cut_eof_ends_eof_rungs_now_and_later_but_not_a_term_rung() -> None:
    cap = GraceCap(eof_ms=500, term_ms=1000)
    results: dict[str, tuple[float, float]] = {}
    with anyio.fail_after(_BOUND_S), bind_grace_cap(cap):
        async with anyio.create_task_group() as group:

            async def wait(rung: str, sleep_s: float) -> None:
                results[rung] = await waited_in(rung, 6000, sleep_s)

            group.start_soon(wait, "eof", 3.0)
            group.start_soon(wait, "term", 0.3)
            await anyio.wait_all_tasks_blocked()  # the rungs are entered and waiting
            cap.cut_eof()
        later = await waited_in("eof", 6000, 3.0)
    assert results["eof"][1] < 0.3  # ended at the cut
    assert results["term"][1] >= 0.3  # ran its own course (under the 1000 ms cap)
    assert later[0] == 0 and later[1] < 0.3
