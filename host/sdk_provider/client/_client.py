"""The host-side DSH SDK client: one runtime process, its JSON-RPC connection, and per-session subscriptions.

``start`` spawns the runtime through a ``ChildConnection`` (all three stdio piped, stderr drained into a 400-line
host-only tail) and sends the bounded ``initialize``; ``run`` drives one receipt-gated activity interval; ``aclose``
is the connection's one shielded teardown, with a bounded ``shutdown`` request first. Every failure is a typed
``SdkClientError`` whose text (exit facts, stderr tail, payload JSON) is host-only.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import anyio
from anyio.abc import TaskGroup

from host._exceptions import (
    ConnectionClosedError,
    ErrorMapping,
    JsonRpcResponseError,
    PeerWriteError,
    RequestTimeoutError,
    ResponseError,
    TransportClosedError,
    as_response_error,
    map_exceptions,
)
from host._json import ContentBlock
from host.jsonrpc import JsonRpcPeer
from host.process import ManagedProcess, ProcessOutcome, build_child_env, eof_rung, spawn_managed
from host.run._child import ChildConnection, open_child_connection
from host.sdk_provider.client._consume import consume_session_run
from host.sdk_provider.client._models import InitializeParams
from host.sdk_provider.client._spec import SdkRunSpec
from host.sdk_provider.client._subscription import (
    NotificationObserver,
    SessionNotification,
    SessionRunOutcome,
    Subscription,
)
from host.sdk_provider.client._texts import (
    CLIENT_CLOSED_MESSAGE,
    FAILED_TO_START_MESSAGE,
    NOT_RUNNING_MESSAGE,
    RUNTIME_CLOSED_MESSAGE,
    RUNTIME_EXITED_MESSAGE,
    TEARDOWN_AGGREGATE_MESSAGE,
    closed_reason,
    failure_context,
    method_not_found,
    timeout_text,
)
from host.sdk_provider.client._validation import ServerInfo, message_id_of, server_info_of

__all__ = [
    "CLIENT_CLOSED_MESSAGE",
    "FAILED_TO_START_MESSAGE",
    "NOT_RUNNING_MESSAGE",
    "RUNTIME_CLOSED_MESSAGE",
    "RUNTIME_EXITED_MESSAGE",
    "STDERR_TAIL_LINES",
    "TEARDOWN_AGGREGATE_MESSAGE",
    "NotificationObserver",
    "SdkClient",
    "SessionRunOutcome",
]

logger = logging.getLogger(__name__)

_SHUTDOWN_FAILED_NOTE: Final = "shutdown request failed: {message}"

STDERR_TAIL_LINES: Final = 400
"""How many of the newest non-empty stderr lines the host-only tail keeps."""

# How long a failed request or a dead runtime waits for exit facts and stderr EOF before describing the failure.
_STDIO_SETTLE_S: Final = 0.1
# The peer's refusal of a request, as the client's own raw error (chained).
_RESPONSE_ERRORS: Final[ErrorMapping] = {ResponseError: as_response_error(JsonRpcResponseError)}

# The only runtime notifications routed to sessions; everything else (subagent.*) is dropped.
_ROUTED_METHODS: Final = frozenset({"session.event", "session.status"})


def _next_request_id() -> str:
    return f"req_{uuid.uuid4().hex}"


class SdkClient:
    """One DSH SDK runtime process and its connection; one client per run, never restarted.

    Args:
        spec: the resolved launch (command, args, absolute cwd, explicit env), route and bounds.
    """

    def __init__(self, spec: SdkRunSpec) -> None:
        self._spec = spec
        self._connection: ChildConnection[ManagedProcess] | None = None
        self._handle: ManagedProcess | None = None
        self._peer: JsonRpcPeer | None = None
        self._subscriptions: dict[str, list[Subscription]] = {}
        self._input_ended = False
        self._closed = False
        self._start_attempted = False

    @property
    def pid(self) -> int | None:
        """The runtime's pid once spawned."""
        return self._handle.pid if self._handle is not None else None

    @property
    def outcome(self) -> ProcessOutcome | None:
        """The runtime's exit facts, once observed."""
        return self._handle.outcome if self._handle is not None else None

    @property
    def stderr_tail(self) -> tuple[str, ...]:
        """The newest non-empty stderr lines (host-only)."""
        return self._handle.stderr_tail if self._handle is not None else ()

    @property
    def non_json_lines(self) -> int:
        """How many non-blank lines the runtime wrote to stdout that were no JSON-RPC message."""
        return self._peer.non_json.count if self._peer is not None else 0

    # -- startup -----------------------------------------------------------------------------------------------

    async def start(self, task_group: TaskGroup) -> ServerInfo:
        """Spawn the runtime and send ``initialize``, bounded by ``initialize_timeout_ms``.

        Args:
            task_group: owns the reader, the stderr drain and the exit watcher (the host's group).

        Raises:
            TransportClosedError: the spawn failed, or the runtime died or closed stdio before answering.
            RequestTimeoutError: ``initialize`` was not answered in time.
            JsonRpcResponseError: the runtime refused ``initialize``.
            SdkProtocolError: the result carried no server identity.
        """
        if self._closed:
            raise TransportClosedError(CLIENT_CLOSED_MESSAGE)
        if self._start_attempted:
            raise RuntimeError("SdkClient.start() may only be called once")
        self._start_attempted = True
        await self._spawn(task_group)
        spec = self._spec
        params = InitializeParams(
            cwd=spec.cwd,
            provider=spec.provider,
            model=spec.model,
            reasoning_effort=spec.reasoning_effort,
            max_tokens=spec.max_tokens,
        )
        result = await self.request("initialize", params.to_wire(), timeout_ms=spec.initialize_timeout_ms)
        info = server_info_of(result)
        handle = self._handle
        if handle is not None:
            # The runtime is alive and booted: record its helpers now. One that setsid()s away and outlives an
            # early exit of the runtime could no longer be found by the snapshot that `aclose` takes.
            handle.snapshot_descendants()
        return info

    async def _spawn(self, task_group: TaskGroup) -> None:
        spec = self._spec

        async def spawn() -> ManagedProcess:
            return await spawn_managed(
                [spec.command, *spec.args],
                cwd=spec.cwd,
                env=build_child_env(spec.env, inherit=spec.inherit_env),
                task_group=task_group,
                grace_ms=spec.dispose_grace_ms,
                capture_stderr=True,
                stderr_tail_lines=STDERR_TAIL_LINES,
            )

        try:
            connection = await open_child_connection(
                spawn,
                self._make_peer,
                task_group=task_group,
                eof_grace_ms=spec.dispose_eof_grace_ms,
                aggregate_message=TEARDOWN_AGGREGATE_MESSAGE,
                name=lambda handle: f"DSH SDK runtime {handle.pid}",
                on_input_end=self._end_input,
                on_close=lambda: self._fail_subscriptions(RUNTIME_CLOSED_MESSAGE),
                before_teardown=self._shut_down,
            )
        except OSError as exc:
            raise TransportClosedError(f"{FAILED_TO_START_MESSAGE}\nspawn error: {exc}") from exc
        self._connection, self._handle, self._peer = connection, connection.handle, connection.peer

    def _make_peer(self, handle: ManagedProcess) -> JsonRpcPeer:
        return JsonRpcPeer(
            send=handle.stdin,
            receive=handle.stdout,
            on_notification=self._route,
            next_id=_next_request_id,
            method_not_found=method_not_found,
        )

    # -- requests ----------------------------------------------------------------------------------------------

    async def request(
        self, method: str, params: Mapping[str, object] | None = None, *, timeout_ms: float | None = None
    ) -> object:
        """Send one request and return its ``result`` (``None`` when absent).

        Args:
            method: the runtime method.
            params: the params object (``{}`` when omitted).
            timeout_ms: abandons the wait (and its pending entry) after this long; unbounded when ``None``.

        Raises:
            TransportClosedError: the client is closed, the runtime is not running, or the transport failed.
            RequestTimeoutError: ``timeout_ms`` elapsed.
            JsonRpcResponseError: the runtime answered with an ``error`` object.
        """
        if self._closed:
            raise TransportClosedError(CLIENT_CLOSED_MESSAGE)
        return await self._request(method, {} if params is None else params, timeout_ms)

    async def _request(self, method: str, params: Mapping[str, object], timeout_ms: float | None) -> object:
        peer, handle = self._peer, self._handle
        if peer is None or handle is None or handle.outcome is not None:
            await self._settle_stdio()
            raise TransportClosedError(NOT_RUNNING_MESSAGE + failure_context(self._handle))
        try:
            with map_exceptions(_RESPONSE_ERRORS):
                if timeout_ms is None:
                    return await peer.request(method, params)
                with anyio.move_on_after(timeout_ms / 1000):
                    return await peer.request(method, params)
        except (ConnectionClosedError, PeerWriteError) as exc:
            # A write to a dead pipe is not the signal; the input edge is. Describe whichever ended first.
            await self._settle_stdio()
            reason = str(exc) if isinstance(exc, ConnectionClosedError) else closed_reason(peer)
            raise TransportClosedError(reason + failure_context(self._handle)) from exc
        raise RequestTimeoutError(timeout_text(method, timeout_ms, self.stderr_tail))

    async def prompt(self, session_id: str, content_blocks: Sequence[ContentBlock]) -> str:
        """Send ``session/prompt`` (no timeout) and return its ``messageId`` receipt.

        Raises:
            SdkProtocolError: the result carried no string ``messageId``.
            TransportClosedError | JsonRpcResponseError: as for ``request``.
        """
        result = await self.request("session/prompt", {"sessionId": session_id, "contentBlocks": list(content_blocks)})
        return message_id_of(result)

    # -- subscriptions and the run -----------------------------------------------------------------------------

    def subscribe(self, session_id: str, *, on_overflow: Callable[[], None] | None = None) -> Subscription:
        """Queue every routed notification whose ``params.sessionId`` is ``session_id``, from now on, bounded by the
        spec's ``queue_bytes`` (``on_overflow`` hears the overflow)."""
        subscription = Subscription(
            session_id, self._unsubscribe, max_bytes=self._spec.queue_bytes, on_overflow=on_overflow
        )
        if self._closed:
            subscription.fail(self._failure_factory(RUNTIME_CLOSED_MESSAGE))
        elif self._input_ended:
            subscription.fail(self._failure_factory(RUNTIME_EXITED_MESSAGE))
        else:
            self._subscriptions.setdefault(session_id, []).append(subscription)
        return subscription

    async def run(
        self,
        session_id: str,
        content_blocks: Sequence[ContentBlock],
        on_notification: NotificationObserver | None = None,
    ) -> SessionRunOutcome:
        """Prompt ``session_id`` and consume its notifications up to the root ``idle`` after the receipt.

        Everything before the receipt is skipped. From the receipt on, each ``session.event`` is validated; every
        collected notification goes to ``on_notification``, and the outcome keeps the last ``turn/end``.

        Raises:
            SdkProtocolError: a malformed prompt result or root event.
            TransportClosedError: input ended, the subscription was closed, or the transport failed.
            JsonRpcResponseError: the runtime refused the prompt.
            QueueOverflowError: the notifications queued before the prompt's response passed ``queue_bytes``.
        """
        overflow = anyio.CancelScope()
        # Subscribe before the prompt: the receipt may precede its response.
        subscription = self.subscribe(session_id, on_overflow=overflow.cancel)
        try:
            message_id: str | None = None
            with overflow:
                message_id = await self.prompt(session_id, content_blocks)
            if message_id is None:
                failure = subscription.failure
                assert failure is not None  # only the queue's overflow cancels the prompt
                raise failure()
            return await consume_session_run(
                session_id,
                message_id,
                lambda: self._receive(subscription),
                on_notification,
            )
        finally:
            subscription.close()

    async def _receive(self, subscription: Subscription) -> SessionNotification:
        try:
            return await subscription.receive()
        except TransportClosedError:
            failure = subscription.failure
            if subscription.closed or failure is None:
                raise
            # Input ended: stdout EOF often precedes the observed exit by a poll, so let the exit facts and the
            # stderr tail settle (bounded) before describing the failure (host-only text).
            await self._settle_stdio()
            raise failure() from None

    # -- teardown ----------------------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Send a bounded ``shutdown``, then climb the teardown ladder; once, shielded, one shared outcome.

        Raises:
            Exception: the ladder failed (a single rung error as is, several as ``AggregateError``).
        """
        self._closed = True
        if self._connection is None:
            self._fail_subscriptions(RUNTIME_CLOSED_MESSAGE)
            return
        await self._connection.aclose()

    async def _shut_down(self) -> None:
        """The connection's teardown prelude: a bounded ``shutdown`` request, then a short wait for the exit."""
        handle, peer = self._handle, self._peer
        assert handle is not None and peer is not None
        # Snapshot the tree while the leader lives: once `shutdown` made it exit, a descendant that setsid()'d out
        # of the group is re-parented away and could no longer be found.
        handle.snapshot_descendants()
        try:
            # The polite rung before stdin EOF: a process shutting down (serve) caps it like the EOF rung.
            with eof_rung(self._spec.shutdown_timeout_ms) as bound_ms:
                await self._request("shutdown", {}, bound_ms)
        except Exception as exc:  # host-only by contract: a failed shutdown only escalates to the ladder
            handle.append_stderr_line(_SHUTDOWN_FAILED_NOTE.format(message=exc))
            logger.debug("DSH SDK runtime %d: shutdown request failed", handle.pid, exc_info=True)
        else:
            # The runtime exits right after answering: wait briefly for its exit edge (stdout EOF, then the reaped
            # exit) so the ladder's polled exit check usually succeeds at once. Bounded by the 100 ms of stdio
            # settling the dispose bound allows, so a runtime that stays up costs no extra EOF window.
            with anyio.move_on_after(min(_STDIO_SETTLE_S, self._spec.dispose_eof_grace_ms / 1000)):
                await peer.wait_closed()
                await handle.wait_outcome()

    # -- routing -----------------------------------------------------------------------------------------------

    def _route(self, method: str, params: dict[str, Any]) -> None:
        if method not in _ROUTED_METHODS:
            return
        session_id = params.get("sessionId")
        if not isinstance(session_id, str):
            return
        subscriptions = self._subscriptions.get(session_id)
        if subscriptions:
            notification = SessionNotification(method, params)
            for subscription in subscriptions:
                subscription.push(notification)

    def _unsubscribe(self, subscription: Subscription) -> None:
        subscriptions = self._subscriptions.get(subscription.session_id)
        if subscriptions is None:
            return
        if subscription in subscriptions:
            subscriptions.remove(subscription)
        if not subscriptions:
            del self._subscriptions[subscription.session_id]

    def _end_input(self) -> None:
        if self._input_ended:
            return
        self._input_ended = True
        self._fail_subscriptions(RUNTIME_EXITED_MESSAGE)

    def _fail_subscriptions(self, reason: str) -> None:
        factory = self._failure_factory(reason)
        for subscriptions in list(self._subscriptions.values()):
            for subscription in subscriptions:
                subscription.fail(factory)

    def _failure_factory(self, reason: str) -> Callable[[], TransportClosedError]:
        # Built lazily: exit facts and the stderr tail are as complete as possible when the consumer gets there.
        return lambda: TransportClosedError(reason + failure_context(self._handle))

    async def _settle_stdio(self) -> None:
        """Wait briefly for the exit facts and stderr EOF, so the error text is complete."""
        handle = self._handle
        if handle is None:
            return
        with anyio.move_on_after(_STDIO_SETTLE_S):
            await handle.wait_outcome()
            await handle.wait_stderr_closed()
