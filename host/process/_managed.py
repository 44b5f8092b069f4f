"""Spawn a managed child in its own session and own its whole process tree until it is proven gone.

The child is spawned off the event loop (:mod:`host.process._spawn`) and its exit is awaited on a Linux pidfd,
never through pipe EOF (an inherited pipe held by a grandchild makes an exited child look hung if one waits for
EOF), so a live run costs no wake-ups. The rest of the tree has no exit event: once the leader is gone its
liveness is polled. Liveness, SIGTERM and SIGKILL cover the child's process group plus a psutil snapshot of its
descendants. Every wait is bounded by the caller or by ``grace_ms``; nothing here blocks the event loop.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Mapping, Sequence
from typing import Final

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process, TaskGroup

from host._exceptions import ProcessTreeSurvivedError
from host._json import format_ms
from host.process._graces import term_grace, term_rung
from host.process._handle import ProcessHandle
from host.process._keeper import KeeperTicket, enrol
from host.process._outcome import ProcessOutcome
from host.process._poll import poll_until
from host.process._registry import forget_tree, register_tree
from host.process._spawn import open_pipe_process
from host.process._stderr import StderrTail, drain_stderr
from host.process._tree import ProcessTree

__all__ = ["ManagedProcess", "poll_until", "spawn_managed"]

logger = logging.getLogger(__name__)

# How long aclose() waits for stderr EOF after the tree is gone, so the tail holds the child's last lines.
_STDERR_SETTLE_S: Final = 0.1


class ManagedProcess(ProcessHandle):
    """A child spawned by :func:`spawn_managed`: pipes, exit facts, tree liveness and termination."""

    def __init__(
        self,
        process: Process,
        *,
        tree: ProcessTree,
        grace_ms: float,
        stderr_tail: StderrTail | None,
        ticket: KeeperTicket | None = None,
    ) -> None:
        stdin, stdout = process.stdin, process.stdout
        assert stdin is not None and stdout is not None
        self._process = process
        self._stdin: ByteSendStream = stdin
        self._stdout: ByteReceiveStream = stdout
        self._grace_ms = grace_ms
        self._stderr_tail = stderr_tail
        self._tree = tree
        self._outcome: ProcessOutcome | None = None
        self._tree_gone = False
        self._terminated: anyio.Event | None = None
        self._killed_at: float | None = None
        self._closed = False
        self._ticket = ticket

    @property
    def pid(self) -> int:
        """The direct child's pid, which is also its process group id."""
        return self._process.pid

    @property
    def stdin(self) -> ByteSendStream:
        """The child's stdin pipe."""
        return self._stdin

    @property
    def stdout(self) -> ByteReceiveStream:
        """The child's stdout pipe."""
        return self._stdout

    @property
    def outcome(self) -> ProcessOutcome | None:
        """The direct child's exit facts, once its exit was observed."""
        if self._outcome is None:
            returncode = self._process.returncode
            if returncode is not None:
                self._outcome = ProcessOutcome.from_returncode(returncode)
        return self._outcome

    @property
    def stderr_tail(self) -> tuple[str, ...]:
        """The newest non-empty stderr lines (host-only); empty unless stderr is captured."""
        return self._stderr_tail.lines if self._stderr_tail is not None else ()

    def append_stderr_line(self, line: str) -> None:
        """Append a host-made note to the stderr tail (ignored unless stderr is captured)."""
        if self._stderr_tail is not None:
            self._stderr_tail.append(line)

    async def wait_stderr_closed(self) -> None:
        """Wait until the stderr drain ended (EOF or closed); returns at once unless stderr is captured."""
        if self._stderr_tail is not None:
            await self._stderr_tail.closed.wait()

    def tree_gone(self) -> bool:
        """Whether the direct child's exit was observed and the whole tree is gone (non-blocking)."""
        if self._tree_gone:
            return True
        # Until the leader's exit is observed it counts as alive, so the outcome is known once the tree is gone.
        if self.outcome is None or self._tree.alive(leader_reaped=True):
            return False
        self._tree_gone = True
        forget_tree(self._tree)
        return True

    def snapshot_descendants(self) -> None:
        """Add the leader's current descendants to the managed tree (only while the leader is unreaped)."""
        if self.outcome is None:
            self._tree.snapshot()

    async def wait_outcome(self) -> ProcessOutcome:
        """Wait for the direct child's exit (event-driven, independent of its pipes) and return its facts."""
        outcome = self.outcome
        if outcome is None:
            outcome = self._outcome = ProcessOutcome.from_returncode(await self._process.wait())
        return outcome

    async def wait_exit(self, bound_ms: float) -> bool:
        """Wait at most ``bound_ms`` for the whole tree to be gone.

        Returns:
            ``True`` once the tree is gone, ``False`` when the bound expired first.
        """
        if self.tree_gone():  # already gone (the usual case in the ladder): no bounded wait to enter
            return True
        with anyio.move_on_after(max(bound_ms, 0.0) / 1000):
            if self.outcome is None:
                await self._process.wait()
            await poll_until(self.tree_gone)
        return self.tree_gone()

    async def close_stdin(self) -> None:
        """Close the child's stdin (EOF); errors of an already-dead or closed pipe are ignored."""
        try:
            await self._stdin.aclose()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            logger.debug("closing stdin of child %d failed", self.pid, exc_info=True)

    async def terminate(self) -> None:
        """SIGTERM the tree, then SIGKILL whatever is alive ``grace_ms`` later (sooner under a bound
        :class:`~host.process.GraceCap`); idempotent.

        A repeated or concurrent call waits for the first one. Nothing is sent once the tree was seen gone.
        """
        if self._terminated is not None:
            await self._terminated.wait()
            return
        self._terminated = anyio.Event()
        try:
            if self.tree_gone():
                return
            self.snapshot_descendants()
            self._tree.send(signal.SIGTERM)
            gone = False
            try:
                # The bound cap (host.process._graces) may shorten the grace, also once the wait has begun.
                with term_rung(self._grace_ms) as grace_ms:
                    gone = await self.wait_exit(grace_ms)
            except BaseException:
                # Cancelled mid-grace: never leave a SIGTERM-deaf tree behind.
                self._send_kill()
                raise
            if not gone:
                self._send_kill()
        finally:
            self._terminated.set()

    def _send_kill(self) -> None:
        if not self.tree_gone():
            self._tree.send(signal.SIGKILL)
            self._killed_at = anyio.current_time()

    async def wait_reaped(self) -> None:
        """Wait for the tree to be gone, at most ``grace_ms`` after the SIGKILL (or from now, if none was sent).

        Raises:
            ProcessTreeSurvivedError: The tree is still alive when that bound expires.
        """
        if self.tree_gone():
            return
        grace_ms = term_grace(self._grace_ms)
        start = self._killed_at if self._killed_at is not None else anyio.current_time()
        remaining_ms = (start - anyio.current_time()) * 1000 + grace_ms
        if await self.wait_exit(remaining_ms):
            return
        after = "after SIGKILL" if self._killed_at is not None else "without SIGKILL"
        raise ProcessTreeSurvivedError(f"process tree of pid {self.pid} still alive {format_ms(grace_ms)}ms {after}")

    async def aclose(self) -> None:
        """Close the pipes and release the process; idempotent, shielded and bounded.

        The teardown ladder is the graceful path. A tree still alive here is SIGKILLed, because a handle must not
        outlive its pipes with a live child behind it.
        """
        if self._closed:
            return
        self._closed = True
        grace_ms = term_grace(self._grace_ms)
        with anyio.CancelScope(shield=True):
            if not self.tree_gone():
                logger.debug("releasing child %d while its tree is alive; sending SIGKILL", self.pid)
                self.snapshot_descendants()
                self._send_kill()
                await self.wait_exit(grace_ms)
            if self._stderr_tail is not None and not self._stderr_tail.closed.is_set() and self.tree_gone():
                with anyio.move_on_after(_STDERR_SETTLE_S):
                    await self._stderr_tail.closed.wait()
            with anyio.move_on_after(grace_ms / 1000):
                await self._process.aclose()
            if self._ticket is not None:
                # Whatever of the run escaped the tree (setsid + orphaned, double-forked) is the keeper's to end.
                self._ticket.retire(grace_ms)


async def spawn_managed(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    task_group: TaskGroup,
    grace_ms: float,
    capture_stderr: bool = False,
    stderr_tail_lines: int = 400,
    stderr_logger: logging.Logger | None = None,
) -> ManagedProcess:
    """Spawn ``argv`` as the leader of a new session with stdin/stdout pipes.

    Args:
        argv: Command and arguments (never run through a shell).
        cwd: The child's working directory.
        env: The child's complete environment (see :func:`build_child_env`).
        task_group: Owns the stderr drain task when ``capture_stderr`` is set.
        grace_ms: The signal grace of :meth:`ManagedProcess.terminate` and :meth:`ManagedProcess.wait_reaped`.
        capture_stderr: Pipe stderr into a drained tail instead of inheriting the host's stderr.
        stderr_tail_lines: How many of the newest non-empty stderr lines the tail keeps.
        stderr_logger: Receives each captured line at debug level (this module's drain logger by default).

    Raises:
        OSError: The child could not be spawned (``FileNotFoundError``, ``PermissionError``, ...), unchanged.
    """
    ticket = enrol(env)
    try:
        process = await open_pipe_process(argv, cwd=cwd, env=ticket.env, capture_stderr=capture_stderr)
    except BaseException:
        ticket.retire(0)
        raise
    # No await from here on until the drain task is handed to the task group: a cancellation delivered in the
    # gap would leak a live child.
    try:
        ticket.track(process.pid)
        tree = ProcessTree(process.pid)
        tail = StderrTail(process.pid, stderr_tail_lines, log=stderr_logger) if capture_stderr else None
        managed = ManagedProcess(process, tree=tree, grace_ms=grace_ms, stderr_tail=tail, ticket=ticket)
        if tail is not None:
            assert process.stderr is not None
            task_group.start_soon(drain_stderr, process.stderr, tail, name=f"drain stderr of child {process.pid}")
        register_tree(tree)
    except BaseException:
        # Never hand back an exception with a live, unowned child behind it.
        process.kill()
        with anyio.CancelScope(shield=True), anyio.move_on_after(grace_ms / 1000):
            await process.aclose()
        ticket.retire(grace_ms)
        raise
    return managed
