"""Fault-injection decorators around the real managed-process handle (docs/behaviour.md#acp-test-seams).

Each decorator wraps a live ``ManagedProcess`` and replaces one member; everything else (and ``aclose``) is
forwarded, so the run under test still drives a real child. ``decorated_spawn`` turns decorators into the run
entry's ``spawn`` seam.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, TaskGroup

from host.process import ProcessHandle, ProcessOutcome, spawn_managed
from host.process._handle import SupportsAclose
from host.run._child import SpawnFn
from tests.acp_conformance import WireRecorder

HandleDecorator = Callable[[ProcessHandle], ProcessHandle]


class ForwardingHandle(ProcessHandle, SupportsAclose):
    """Forwards every member to the wrapped handle; subclasses replace one."""

    def __init__(self, inner: ProcessHandle) -> None:
        self.inner = inner

    @property
    def pid(self) -> int:
        return self.inner.pid

    @property
    def stdin(self) -> ByteSendStream:
        return self.inner.stdin

    @property
    def stdout(self) -> ByteReceiveStream:
        return self.inner.stdout

    @property
    def outcome(self) -> ProcessOutcome | None:
        return self.inner.outcome

    async def wait_outcome(self) -> ProcessOutcome:
        return await self.inner.wait_outcome()

    async def wait_exit(self, bound_ms: float) -> bool:
        return await self.inner.wait_exit(bound_ms)

    async def terminate(self) -> None:
        await self.inner.terminate()

    async def wait_reaped(self) -> None:
        await self.inner.wait_reaped()

    async def close_stdin(self) -> None:
        await self.inner.close_stdin()

    def snapshot_descendants(self) -> None:
        self.inner.snapshot_descendants()

    def tree_gone(self) -> bool:
        return self.inner.tree_gone()

    async def aclose(self) -> None:
        if isinstance(self.inner, SupportsAclose):
            await self.inner.aclose()
        else:
            await self.inner.stdin.aclose()
            await self.inner.stdout.aclose()


def decorated_spawn(*decorators: HandleDecorator) -> SpawnFn:
    """A ``spawn`` seam: ``spawn_managed``, then each decorator applied in order (innermost first)."""

    async def spawn(
        argv: Sequence[str], *, cwd: str, env: Mapping[str, str], task_group: TaskGroup, grace_ms: float
    ) -> ProcessHandle:
        handle: ProcessHandle = await spawn_managed(argv, cwd=cwd, env=env, task_group=task_group, grace_ms=grace_ms)
        for decorate in decorators:
            handle = decorate(handle)
        return handle

    return spawn


def raising_spawn(error: BaseException) -> SpawnFn:
    """A ``spawn`` seam that raises ``error`` without spawning anything."""

    async def spawn(
        argv: Sequence[str], *, cwd: str, env: Mapping[str, str], task_group: TaskGroup, grace_ms: float
    ) -> ProcessHandle:
        raise error

    return spawn


class _RejectFinalExitWait(ForwardingHandle):
    def __init__(self, inner: ProcessHandle, raw: Exception, *, after_exit: bool) -> None:
        super().__init__(inner)
        self._raw = raw
        self._after_exit = after_exit

    @property
    def outcome(self) -> ProcessOutcome | None:
        # Without `after_exit` the injected failure proves nothing about the child: no exit was observed.
        return self.inner.outcome if self._after_exit else None

    async def wait_exit(self, bound_ms: float) -> bool:
        return False

    async def wait_reaped(self) -> None:
        if self._after_exit:
            await self.inner.wait_outcome()
        raise self._raw


def reject_final_exit_wait(raw: Exception) -> HandleDecorator:
    """``wait_exit`` returns ``False`` at once; ``wait_reaped`` raises ``raw`` at once."""
    return lambda handle: _RejectFinalExitWait(handle, raw, after_exit=False)


def reject_final_exit_wait_after_exit(raw: Exception) -> HandleDecorator:
    """As ``reject_final_exit_wait``, but ``wait_reaped`` raises only after the real child exited."""
    return lambda handle: _RejectFinalExitWait(handle, raw, after_exit=True)


class _TapBoundedExitWait(ForwardingHandle):
    def __init__(self, inner: ProcessHandle, calls: list[float]) -> None:
        super().__init__(inner)
        self._calls = calls

    async def wait_exit(self, bound_ms: float) -> bool:
        self._calls.append(bound_ms)
        return await self.inner.wait_exit(bound_ms)


def tap_bounded_exit_wait(calls: list[float]) -> HandleDecorator:
    """Append the bound of every ``wait_exit`` call to ``calls``."""
    return lambda handle: _TapBoundedExitWait(handle, calls)


class _EndedStream(ByteReceiveStream):
    async def receive(self, max_bytes: int = 65536) -> bytes:
        raise anyio.EndOfStream

    async def aclose(self) -> None:
        pass


class _CloseProtocolImmediately(ForwardingHandle):
    @property
    def stdout(self) -> ByteReceiveStream:
        return _EndedStream()


def close_protocol_immediately() -> HandleDecorator:
    """The client sees an already-ended stdout while the child lives."""
    return _CloseProtocolImmediately


class _PromptTrip:
    """Set once the outgoing bytes contained ``"session/prompt"``; cuts the watched stdout."""

    def __init__(self) -> None:
        self.tripped = False
        self.scopes: set[anyio.CancelScope] = set()

    def trip(self) -> None:
        self.tripped = True
        for scope in self.scopes:
            scope.cancel()


class _TripOnPromptSend(ByteSendStream):
    def __init__(self, inner: ByteSendStream, trip: _PromptTrip) -> None:
        self._inner = inner
        self._trip = trip

    async def send(self, item: bytes) -> None:
        await self._inner.send(item)
        if b'"session/prompt"' in item:
            self._trip.trip()

    async def aclose(self) -> None:
        await self._inner.aclose()


class _CutOnPromptReceive(ByteReceiveStream):
    def __init__(self, inner: ByteReceiveStream, trip: _PromptTrip) -> None:
        self._inner = inner
        self._trip = trip

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._trip.tripped:
            raise anyio.EndOfStream
        with anyio.CancelScope() as scope:
            self._trip.scopes.add(scope)
            try:
                return await self._inner.receive(max_bytes)
            finally:
                self._trip.scopes.discard(scope)
        raise anyio.EndOfStream

    async def aclose(self) -> None:
        await self._inner.aclose()


class _CloseProtocolOnPrompt(ForwardingHandle):
    def __init__(self, inner: ProcessHandle) -> None:
        super().__init__(inner)
        trip = _PromptTrip()
        self._stdin = _TripOnPromptSend(inner.stdin, trip)
        self._stdout = _CutOnPromptReceive(inner.stdout, trip)

    @property
    def stdin(self) -> ByteSendStream:
        return self._stdin

    @property
    def stdout(self) -> ByteReceiveStream:
        return self._stdout


def close_protocol_on_prompt() -> HandleDecorator:
    """The client's stdout ends as soon as the outgoing bytes contain ``"session/prompt"``; the child lives."""
    return _CloseProtocolOnPrompt


class _ReplaceProcessOutcome(ForwardingHandle):
    def __init__(self, inner: ProcessHandle, replacement: ProcessOutcome) -> None:
        super().__init__(inner)
        self._replacement = replacement

    @property
    def outcome(self) -> ProcessOutcome | None:
        return self._replacement if self.inner.outcome is not None else None

    async def wait_outcome(self) -> ProcessOutcome:
        await self.inner.wait_outcome()
        return self._replacement


def replace_process_outcome(outcome: ProcessOutcome) -> HandleDecorator:
    """``wait_outcome`` (and ``outcome``) report ``outcome`` once the real child exited."""
    return lambda handle: _ReplaceProcessOutcome(handle, outcome)


class _TeeWire(ForwardingHandle):
    def __init__(self, inner: ProcessHandle, client: WireRecorder, agent: WireRecorder) -> None:
        super().__init__(inner)
        self._stdin = client.tee_send(inner.stdin)
        self._stdout = agent.tee_receive(inner.stdout)

    @property
    def stdin(self) -> ByteSendStream:
        return self._stdin

    @property
    def stdout(self) -> ByteReceiveStream:
        return self._stdout


def tee_wire(client: WireRecorder, agent: WireRecorder) -> HandleDecorator:
    """Record what the host writes (``client``) and what the agent writes (``agent``), for the schema oracle."""
    return lambda handle: _TeeWire(handle, client, agent)
