"""CancelController / CancelSignal, fuse and the anyio bridge (docs/behaviour.md#registry-cancel-signal,
#registry-anyio-mapping, scenario 42)."""

from __future__ import annotations

import logging

import anyio
import pytest

from host.cancel import CancelController, CancelSignal, fuse
from host.cancel._bridge import cancel_scope_on


def test_cancel_sets_state_and_runs_listeners_in_registration_order() -> None:
    controller = CancelController()
    seen: list[tuple[str, CancelSignal, object]] = []
    controller.signal.add_listener(lambda s: seen.append(("first", s, s.reason)))
    controller.signal.add_listener(lambda s: seen.append(("second", s, s.reason)))
    assert not controller.signal.cancelled
    assert controller.signal.reason is None
    controller.cancel("stop")
    assert controller.signal.cancelled
    assert controller.signal.reason == "stop"
    assert seen == [("first", controller.signal, "stop"), ("second", controller.signal, "stop")]


def test_first_reason_wins_and_later_cancels_run_no_listener() -> None:
    controller = CancelController()
    calls: list[object] = []
    controller.signal.add_listener(lambda s: calls.append(s.reason))
    controller.cancel("first")
    controller.cancel("second")
    assert controller.signal.reason == "first"
    assert calls == ["first"]


def test_cancel_without_reason_leaves_reason_none_but_cancels() -> None:
    controller = CancelController()
    controller.cancel()
    assert controller.signal.cancelled
    assert controller.signal.reason is None


def test_listener_added_after_cancellation_is_never_called() -> None:
    controller = CancelController()
    controller.cancel("done")
    calls: list[object] = []
    remove = controller.signal.add_listener(calls.append)
    remove()
    remove()
    assert calls == []


def test_removed_listener_is_not_called_and_remover_is_idempotent() -> None:
    controller = CancelController()
    calls: list[str] = []
    remove = controller.signal.add_listener(lambda _s: calls.append("removed"))
    controller.signal.add_listener(lambda _s: calls.append("kept"))
    remove()
    remove()
    controller.cancel()
    assert calls == ["kept"]


def test_raising_listener_is_logged_and_does_not_stop_later_listeners(caplog: pytest.LogCaptureFixture) -> None:
    controller = CancelController()
    calls: list[str] = []

    def broken(_signal: CancelSignal) -> None:
        raise RuntimeError("listener broke")

    controller.signal.add_listener(broken)
    controller.signal.add_listener(lambda _s: calls.append("after"))
    with caplog.at_level(logging.ERROR, logger="host.cancel._signal"):
        controller.cancel("x")
    assert calls == ["after"]
    assert any(record.exc_info and "listener broke" in str(record.exc_info[1]) for record in caplog.records)


def test_controller_built_outside_an_event_loop_can_be_waited_on_later() -> None:
    controller = CancelController()

    async def main() -> None:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(controller.signal.wait)
                await anyio.wait_all_tasks_blocked()
                controller.cancel("late")
        assert controller.signal.reason == "late"

    anyio.run(main)


@pytest.mark.anyio
async def test_wait_returns_at_once_for_an_already_cancelled_signal() -> None:
    controller = CancelController()
    controller.cancel()
    with anyio.fail_after(5):
        await controller.signal.wait()


@pytest.mark.anyio
async def test_wait_blocks_until_cancel() -> None:
    controller = CancelController()
    woke = anyio.Event()

    async def waiter() -> None:
        await controller.signal.wait()
        woke.set()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(waiter)
            await anyio.wait_all_tasks_blocked()
            assert not woke.is_set()
            controller.cancel()
    assert woke.is_set()


def test_a_bare_signal_never_cancels() -> None:
    signal = CancelSignal()
    assert not signal.cancelled
    assert signal.reason is None


def test_fuse_of_a_signal_with_itself_returns_that_same_signal() -> None:
    a = CancelController()
    fused, dispose = fuse(a.signal, a.signal)
    assert fused is a.signal
    dispose()
    dispose()


def test_fuse_with_both_already_cancelled_takes_the_primary_reason() -> None:
    a, b = CancelController(), CancelController()
    b.cancel("b-reason")
    a.cancel("a-reason")
    fused, _dispose = fuse(a.signal, b.signal)
    assert fused.cancelled
    assert fused.reason == "a-reason"


def test_fuse_with_only_the_secondary_cancelled_takes_its_reason() -> None:
    a, b = CancelController(), CancelController()
    b.cancel("b-reason")
    fused, _dispose = fuse(a.signal, b.signal)
    assert fused.reason == "b-reason"


def test_fuse_relays_the_first_source_and_ignores_the_later_one() -> None:
    a, b = CancelController(), CancelController()
    fused, _dispose = fuse(a.signal, b.signal)
    assert fused is not a.signal and fused is not b.signal
    assert not fused.cancelled
    b.cancel("b-reason")
    assert fused.cancelled and fused.reason == "b-reason"
    a.cancel("a-reason")
    assert fused.reason == "b-reason"


def test_disposed_fuse_no_longer_relays() -> None:
    a, b = CancelController(), CancelController()
    fused, dispose = fuse(a.signal, b.signal)
    dispose()
    dispose()
    a.cancel()
    b.cancel()
    assert not fused.cancelled


def test_fuse_relay_listeners_see_the_relay_signal_cancelled() -> None:
    a, b = CancelController(), CancelController()
    fused, _dispose = fuse(a.signal, b.signal)
    seen: list[object] = []
    fused.add_listener(lambda s: seen.append(s.reason))
    a.cancel("a-reason")
    assert seen == ["a-reason"]


@pytest.mark.anyio
async def test_cancel_scope_on_cancels_the_scope_when_the_signal_fires() -> None:
    controller = CancelController()
    with anyio.fail_after(5):
        with cancel_scope_on(controller.signal) as scope:
            controller.cancel()
            await anyio.sleep_forever()
    assert scope.cancelled_caught


@pytest.mark.anyio
async def test_cancel_scope_on_a_cancelled_signal_is_cancelled_at_once() -> None:
    controller = CancelController()
    controller.cancel()
    with anyio.fail_after(5):
        with cancel_scope_on(controller.signal) as scope:
            await anyio.sleep_forever()
    assert scope.cancelled_caught


@pytest.mark.anyio
async def test_cancel_scope_on_stops_listening_after_the_block() -> None:
    controller = CancelController()
    with anyio.fail_after(5):
        with cancel_scope_on(controller.signal) as scope:
            await anyio.lowlevel.checkpoint()
        controller.cancel()
        await anyio.lowlevel.checkpoint()
    assert not scope.cancel_called
