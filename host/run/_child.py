"""``ChildConnection``: one child process and its JSON-RPC connection, owned from spawn until its tree is gone.

It spawns the child (shielded, so a cancel cannot leak a live process nobody owns), runs the single ordered
reader and the exit watch in its own task group, and tears down once: the caller's prelude, the teardown ladder,
closing the peer and joining its own tasks, inside one shield with every wait bounded. Exit is observed by
polling, never by pipe EOF: once the child exited, the reader may drain what it wrote for a short window, then
the connection closes, so a descendant holding stdout open cannot keep a request pending.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Final, Generic, Protocol, TypeVar

import anyio
from anyio.abc import TaskGroup

from host.jsonrpc import JsonRpcPeer
from host.process import ProcessHandle, SharedTeardown, climb_teardown_ladder
from host.run._spawned import notify_spawned

__all__ = ["ChildConnection", "SpawnFn", "open_child_connection"]

logger = logging.getLogger(__name__)

# After the child's exit is observed, how long the reader may still drain what it wrote before the connection is
# closed (a descendant that inherited stdout would otherwise keep it open forever).
EXIT_DRAIN_TIMEOUT_S: Final = 0.1

HandleT = TypeVar("HandleT", bound=ProcessHandle)


class SpawnFn(Protocol):
    """The seam that creates the managed child (``spawn_managed`` or a test decorator around it)."""

    async def __call__(
        self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str], task_group: TaskGroup, grace_ms: float
    ) -> ProcessHandle: ...


def _noop() -> None:
    pass


class ChildConnection(Generic[HandleT]):
    """A spawned child, its peer, its reader and exit watch, and its one teardown.

    Build it with :func:`open_child_connection`; ``aclose`` is the only way it ends.
    """

    def __init__(
        self,
        handle: HandleT,
        peer: JsonRpcPeer,
        *,
        eof_grace_ms: float,
        aggregate_message: str,
        name: str,
        on_input_end: Callable[[], None] = _noop,
        on_close: Callable[[], None] = _noop,
        before_teardown: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        """Bind the child and its peer; nothing runs until :meth:`start_in`.

        Args:
            handle: the managed child.
            peer: the JSON-RPC peer over the child's stdio.
            eof_grace_ms: the ladder's bound on the child's exit after stdin EOF.
            aggregate_message: the ladder's ``AggregateError`` text when several rungs fail.
            name: names the connection's task (for example ``ACP child 1234``).
            on_input_end: called once, synchronously, when the reader ends or the child's exit closes the peer.
            on_close: called synchronously by the teardown right after it closed the peer.
            before_teardown: awaited first by the teardown, inside its shield (a graceful protocol goodbye).
        """
        self.handle: Final = handle
        self.peer: Final = peer
        self._eof_grace_ms = eof_grace_ms
        self._aggregate_message = aggregate_message
        self._name = name
        self._on_input_end = on_input_end
        self._on_close = on_close
        self._before_teardown = before_teardown
        self._input_ended = False
        self._scope = anyio.CancelScope()
        self._tasks_done = anyio.Event()
        self._teardown = SharedTeardown(self._tear_down)

    @property
    def closed(self) -> bool:
        """Whether the teardown has completed."""
        return self._teardown.finished

    def start_in(self, task_group: TaskGroup) -> None:
        """Hand the reader and the exit watch to ``task_group`` as one task; synchronous, so no await intervenes."""
        task_group.start_soon(self._serve, name=self._name)

    async def aclose(self) -> None:
        """Tear down once, shielded and bounded: prelude, ladder, close the peer, join the tasks.

        Every caller awaits the same teardown and sees the same outcome.

        Raises:
            Exception: the ladder failed (a single rung error as is, several as ``AggregateError``).
        """
        await self._teardown.run()

    async def _serve(self) -> None:
        try:
            with self._scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(self._watch_exit, name=f"{self._name}: exit watch")
                    # The reader runs in this task itself: one task fewer per run, the same structured join.
                    await self._read()
        finally:
            self._tasks_done.set()

    async def _read(self) -> None:
        try:
            await self.peer.run()
        except Exception:  # containment boundary: the reader must never crash the caller's task group
            logger.debug("reader of %s failed", self._name, exc_info=True)
        finally:
            self._end_input()

    async def _watch_exit(self) -> None:
        await self.handle.wait_outcome()
        if not self._input_ended:  # else the reader has ended already: nothing left to drain
            with anyio.move_on_after(EXIT_DRAIN_TIMEOUT_S):
                await self.peer.wait_closed()
        self._end_input()
        self.peer.close()

    def _end_input(self) -> None:
        if not self._input_ended:
            self._input_ended = True
            self._on_input_end()

    async def _tear_down(self) -> None:
        # Runs inside SharedTeardown's shield: the one shield between a local cancel and the child's SIGTERM.
        try:
            if self._before_teardown is not None:
                await self._before_teardown()
            await climb_teardown_ladder(
                self.handle, eof_grace_ms=self._eof_grace_ms, aggregate_message=self._aggregate_message
            )
        finally:
            self.peer.close()
            self._on_close()
            if not self._tasks_done.is_set():
                # Structured join: the connection's own tasks end at their next checkpoint once their scope is
                # cancelled. (Tasks that already ended need no cancel, whose anyio reason string costs a task repr.)
                self._scope.cancel()
                await self._tasks_done.wait()


async def open_child_connection(
    spawn: Callable[[], Awaitable[HandleT]],
    make_peer: Callable[[HandleT], JsonRpcPeer],
    *,
    task_group: TaskGroup,
    eof_grace_ms: float,
    aggregate_message: str,
    name: Callable[[HandleT], str],
    on_input_end: Callable[[], None] = _noop,
    on_close: Callable[[], None] = _noop,
    before_teardown: Callable[[], Awaitable[None]] | None = None,
) -> ChildConnection[HandleT]:
    """Spawn the child, build its peer and hand the connection's tasks to ``task_group``.

    Args:
        spawn: creates the managed child (its ``OSError`` or a seam's error propagates unchanged).
        make_peer: builds the peer over the child's stdio (synchronous).
        task_group: owns the connection's task (the caller's group).
        eof_grace_ms, aggregate_message, on_input_end, on_close, before_teardown: as for :class:`ChildConnection`.
        name: names the connection's task from the spawned handle.
    """
    # Shielded: a cancel delivered inside open_process would leave a live child nobody owns. Spawning is a bounded
    # fork/exec, and from its return to start_in there is no await.
    handle: HandleT | None = None
    with anyio.CancelScope(shield=True):
        handle = await spawn()
    assert handle is not None  # the shield only defers cancellation; it never swallows the spawn's outcome
    notify_spawned()  # the call's observer (RunHooks.on_spawn): spawned, the handshake comes next
    connection = ChildConnection(
        handle,
        make_peer(handle),
        eof_grace_ms=eof_grace_ms,
        aggregate_message=aggregate_message,
        name=name(handle),
        on_input_end=on_input_end,
        on_close=on_close,
        before_teardown=before_teardown,
    )
    connection.start_in(task_group)
    return connection
