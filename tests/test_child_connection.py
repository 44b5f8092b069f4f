"""``ChildConnection`` logic on an in-process fake child: ladder rung order, exit watch, one shared teardown.

The real-process facts (process groups, SIGKILL, inherited pipes) are pinned in ``tests/process`` and the
provider suites; here only the ordering and memoisation logic runs, with no process at all.
"""

from __future__ import annotations

import json

import anyio
import pytest
from anyio.abc import TaskGroup

from host._exceptions import AggregateError, ConnectionClosedError, ProcessTreeSurvivedError
from host.jsonrpc import JsonRpcPeer
from host.process import run_teardown_ladder
from host.run._child import ChildConnection, open_child_connection
from tests._fake_process import FakeProcess

pytestmark = pytest.mark.anyio

_AGGREGATE = "fake teardown failed"


async def _open(fake: FakeProcess, task_group: TaskGroup) -> ChildConnection[FakeProcess]:
    async def spawn() -> FakeProcess:
        return fake

    def make_peer(handle: FakeProcess) -> JsonRpcPeer:
        return JsonRpcPeer(send=handle.stdin, receive=handle.stdout)

    return await open_child_connection(
        spawn,
        make_peer,
        task_group=task_group,
        eof_grace_ms=20,
        aggregate_message=_AGGREGATE,
        name=lambda handle: f"fake child {handle.pid}",
    )


async def test_a_child_that_exits_on_eof_climbs_no_further_than_the_exit_wait() -> None:
    fake = FakeProcess()
    with anyio.fail_after(5):
        await run_teardown_ladder(fake, eof_grace_ms=20, aggregate_message=_AGGREGATE)
    assert fake.calls == ["snapshot_descendants", "close_stdin", "wait_exit", "aclose"]


async def test_a_child_deaf_to_eof_is_terminated_then_reaped_in_rung_order() -> None:
    fake = FakeProcess(exits_on_eof=False)
    with anyio.fail_after(5):
        await run_teardown_ladder(fake, eof_grace_ms=20, aggregate_message=_AGGREGATE)
    assert fake.calls == ["snapshot_descendants", "close_stdin", "wait_exit", "terminate", "wait_reaped", "aclose"]
    assert fake.outcome is not None and fake.outcome.signal == "SIGTERM"


async def test_a_tree_that_survives_every_rung_reports_the_single_rung_error_as_is() -> None:
    fake = FakeProcess(exits_on_eof=False, exits_on_terminate=False)
    with anyio.fail_after(5), pytest.raises(ProcessTreeSurvivedError):
        await run_teardown_ladder(fake, eof_grace_ms=20, aggregate_message=_AGGREGATE)
    assert fake.calls[-1] == "aclose"


async def test_the_exit_watch_fails_a_pending_request_once_the_child_exited_with_stdout_still_open() -> None:
    fake = FakeProcess()
    async with anyio.create_task_group() as group:
        connection = await _open(fake, group)
        failures: list[BaseException] = []

        async def ask() -> None:
            try:
                await connection.peer.request("ping")
            except ConnectionClosedError as exc:
                failures.append(exc)

        with anyio.fail_after(5):
            group.start_soon(ask)
            request = json.loads(await fake.child_stdin.receive())
            assert request["method"] == "ping"
            fake.exit(0)  # stdout stays open: only the exit watch can end the connection
            await connection.peer.wait_closed()
            await anyio.wait_all_tasks_blocked()
            await connection.aclose()
        assert len(failures) == 1
        assert connection.peer.close_reason == "closed"
    assert fake.calls == ["snapshot_descendants", "close_stdin", "wait_exit", "aclose"]


async def test_what_the_child_wrote_before_exiting_is_still_delivered() -> None:
    fake = FakeProcess()
    async with anyio.create_task_group() as group:
        connection = await _open(fake, group)
        answers: list[object] = []

        async def ask() -> None:
            answers.append(await connection.peer.request("ping"))

        with anyio.fail_after(5):
            group.start_soon(ask)
            request = json.loads(await fake.child_stdin.receive())
            await fake.child_stdout.send(
                json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": "pong"}).encode() + b"\n"
            )
            fake.exit(0)
            await connection.peer.wait_closed()
            await connection.aclose()
        assert answers == ["pong"]


async def test_concurrent_teardowns_run_the_ladder_once_and_share_its_error_object() -> None:
    fake = FakeProcess(exits_on_eof=False, exits_on_terminate=False)
    errors: list[BaseException] = []

    async def close(connection: ChildConnection[FakeProcess]) -> None:
        try:
            await connection.aclose()
        except ProcessTreeSurvivedError as exc:
            errors.append(exc)

    async with anyio.create_task_group() as group:
        connection = await _open(fake, group)
        with anyio.fail_after(5):
            async with anyio.create_task_group() as closers:
                closers.start_soon(close, connection)
                closers.start_soon(close, connection)
            await close(connection)
        fake.exit(-9)
        assert connection.closed
    assert len(errors) == 3 and errors[0] is errors[1] is errors[2]
    assert fake.calls.count("close_stdin") == 1


async def test_a_cancelled_closer_leaves_the_teardown_to_finish() -> None:
    fake = FakeProcess(exits_on_eof=False)
    async with anyio.create_task_group() as group:
        connection = await _open(fake, group)
        with anyio.fail_after(5):
            with anyio.CancelScope() as scope:
                scope.cancel()
                await connection.aclose()  # the shield runs the whole ladder despite the cancelled scope
        assert connection.closed
    assert fake.calls == ["snapshot_descendants", "close_stdin", "wait_exit", "terminate", "wait_reaped", "aclose"]


async def test_several_failing_rungs_aggregate_under_the_connections_message() -> None:
    class FailingStdin(FakeProcess):
        async def close_stdin(self) -> None:
            self.calls.append("close_stdin")
            raise OSError("stdin broke")

    fake = FailingStdin(exits_on_eof=False, exits_on_terminate=False)
    async with anyio.create_task_group() as group:
        connection = await _open(fake, group)
        with anyio.fail_after(5), pytest.raises(AggregateError) as caught:
            await connection.aclose()
        fake.exit(-9)
        assert str(caught.value) == _AGGREGATE
        assert [type(error) for error in caught.value.errors] == [OSError, ProcessTreeSurvivedError]
