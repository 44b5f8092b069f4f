"""The ACP v1 client side of one child: a protocol adapter over a ``ChildConnection``.

Offers no ``fs``/``terminal``/auth capability; answers ``session/request_permission`` through the run's policy
callback and every other agent request with ``-32601 Method not found``. Peer failures are mapped at this boundary
to the raw, host-only ``AcpConnectionClosed``/``AcpResponseError`` (``__cause__`` keeps the peer's error). The child
connection owns the spawn, the reader, the exit watch and the teardown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, cast

from anyio.abc import TaskGroup

from host._exceptions import (
    AcpConnectionClosed,
    AcpResponseError,
    ConnectionClosedError,
    ErrorMapping,
    PeerWriteError,
    ResponseError,
    as_response_error,
    map_exceptions,
    mapped_error,
)
from host._version import package_version
from host.acp_provider._wire import update_of
from host.config import InheritEnv
from host.jsonrpc import JsonRpcPeer, Outstanding
from host.process import ProcessHandle, build_child_env
from host.run._child import ChildConnection, SpawnFn, open_child_connection

__all__ = ["TEARDOWN_AGGREGATE_MESSAGE", "AcpConnection"]

PROTOCOL_VERSION: Final = 1
"""The ACP protocol version the host speaks."""

CONNECTION_CLOSED_MESSAGE: Final = "ACP connection closed"
"""The raw message of a request that failed because the connection ended."""
TEARDOWN_AGGREGATE_MESSAGE: Final = "ACP subprocess teardown failed"
"""Message of the ladder's ``AggregateError`` when several rungs failed (raw, host-only)."""

_CLIENT_NAME: Final = "subagent-host"

UpdateObserver = Callable[[Mapping[str, object]], None]
PermissionPolicyFn = Callable[[Mapping[str, object]], dict[str, object]]


def client_info() -> dict[str, str]:
    """The ``clientInfo`` of ``initialize``: the installed package's name and version."""
    return {"name": _CLIENT_NAME, "version": package_version()}


def _closed(exc: Exception) -> Exception:
    return AcpConnectionClosed(CONNECTION_CLOSED_MESSAGE)


# The peer's raw errors as the ACP provider's raw errors (chained).
_REQUEST_ERRORS: Final[ErrorMapping] = {
    ResponseError: as_response_error(AcpResponseError),
    ConnectionClosedError: _closed,
    PeerWriteError: _closed,
}


_REQUEST_ERROR_CLASSES: Final = tuple(_REQUEST_ERRORS)
"""The peer errors ``_REQUEST_ERRORS`` maps (caught inline on every warm turn, without ``map_exceptions``)."""


def _acp_error(raw: Exception) -> Exception:
    """``raw`` (one of ``_REQUEST_ERROR_CLASSES``) as the ACP provider's raw error."""
    mapped = mapped_error(_REQUEST_ERRORS, raw)
    return mapped if mapped is not None else raw  # never: every caller passes one of the mapped classes


class AcpConnection:
    """The ACP client side of one child connection; built by :func:`open_acp_connection`."""

    def __init__(self, *, on_update: UpdateObserver, on_permission: PermissionPolicyFn) -> None:
        self._on_update = on_update
        self._on_permission = on_permission
        self._child: ChildConnection[ProcessHandle] | None = None
        self._meta: dict[str, str] | None = None

    @property
    def child(self) -> ChildConnection[ProcessHandle]:
        """The child connection this adapter speaks over."""
        assert self._child is not None
        return self._child

    @property
    def handle(self) -> ProcessHandle:
        """The managed child."""
        return self.child.handle

    @property
    def _peer(self) -> JsonRpcPeer:
        return self.child.peer

    def _make_peer(self, handle: ProcessHandle) -> JsonRpcPeer:
        return JsonRpcPeer(
            send=handle.stdin,
            receive=handle.stdout,
            request_handlers={"session/request_permission": self._answer_permission},
            on_notification=self._on_notification,
        )

    @classmethod
    async def open(
        cls,
        spawn: SpawnFn,
        argv: Sequence[str],
        *,
        cwd: str,
        env: Mapping[str, str],
        inherit_env: InheritEnv = "scrubbed",
        grace_ms: float,
        eof_grace_ms: float,
        task_group: TaskGroup,
        on_update: UpdateObserver,
        on_permission: PermissionPolicyFn,
        name: str,
        meta: Mapping[str, str] | None = None,
    ) -> AcpConnection:
        """Spawn an ACP agent and start its connection (reader and exit watch) in ``task_group``.

        Args:
            spawn: creates the managed child (a test seam).
            argv: the agent's command line.
            cwd: the child's working directory.
            env: explicit child variables, merged over the filtered ambient environment.
            inherit_env: which ambient variables the child inherits.
            grace_ms: the SIGTERM→SIGKILL grace and reap bound.
            eof_grace_ms: the ladder's bound on the child's exit after stdin EOF.
            task_group: owns the connection's task (the host's group).
            on_update: called inline by the reader with each ``session/update`` ``update`` object.
            on_permission: decides a ``session/request_permission`` synchronously; returns the wire result.
            name: names the connection's task.
            meta: sent as ``_meta`` on every request (the run's ``traceparent``); ``None``: no ``_meta``.

        Raises:
            Exception: whatever the spawn raised (the caller classifies it as ``process-start``).
        """
        adapter = cls(on_update=on_update, on_permission=on_permission)
        adapter._meta = dict(meta) if meta is not None else None
        child_env = build_child_env(env, inherit=inherit_env)

        async def spawn_child() -> ProcessHandle:
            return await spawn(argv, cwd=cwd, env=child_env, task_group=task_group, grace_ms=grace_ms)

        adapter._child = await open_child_connection(
            spawn_child,
            adapter._make_peer,
            task_group=task_group,
            eof_grace_ms=eof_grace_ms,
            aggregate_message=TEARDOWN_AGGREGATE_MESSAGE,
            name=lambda handle: name,
        )
        return adapter

    async def aclose(self) -> None:
        """Tear the child down once (shielded, bounded); every caller sees the same outcome.

        Raises:
            Exception: the ladder failed (a single rung error as is, several as ``AggregateError``).
        """
        await self.child.aclose()

    async def initialize(self) -> object:
        """Send ``initialize``; the response body is returned raw (and ignored by the run)."""
        params = {"protocolVersion": PROTOCOL_VERSION, "clientCapabilities": {}, "clientInfo": client_info()}
        with map_exceptions(_REQUEST_ERRORS):
            return await self._peer.request("initialize", self._with_meta(params))

    async def new_session(self, cwd: str) -> object:
        """Send ``session/new`` with no MCP servers; the raw result is returned for lenient validation."""
        with map_exceptions(_REQUEST_ERRORS):
            return await self._peer.request("session/new", self._with_meta({"cwd": cwd, "mcpServers": []}))

    async def resume_session(self, session_id: str, cwd: str) -> object:
        """Send ``session/resume`` (no replay); the raw result is returned and ignored."""
        with map_exceptions(_REQUEST_ERRORS):
            return await self._peer.request("session/resume", {"sessionId": session_id, "cwd": cwd, "mcpServers": []})

    async def load_session(self, session_id: str, cwd: str) -> object:
        """Send ``session/load``; the agent replays the history as updates before it answers (``null`` is success)."""
        with map_exceptions(_REQUEST_ERRORS):
            return await self._peer.request("session/load", {"sessionId": session_id, "cwd": cwd, "mcpServers": []})

    async def fork_session(self, session_id: str, cwd: str) -> object:
        """Send ``session/fork``; the raw result (holding the new ``sessionId``) is returned for lenient reading."""
        with map_exceptions(_REQUEST_ERRORS):
            return await self._peer.request("session/fork", {"sessionId": session_id, "cwd": cwd, "mcpServers": []})

    async def close_session(self, session_id: str) -> object:
        """Send ``session/close``; the raw result is returned and ignored."""
        with map_exceptions(_REQUEST_ERRORS):
            return await self._peer.request("session/close", {"sessionId": session_id})

    def bind(self, *, on_update: UpdateObserver, on_permission: PermissionPolicyFn) -> None:
        """Route later updates and permission requests to a new turn (a session's child serves one turn at a time)."""
        self._on_update = on_update
        self._on_permission = on_permission

    async def prompt(
        self, session_id: str, blocks: Sequence[Mapping[str, object]], *, on_response: Callable[[object], None]
    ) -> object:
        """Send ``session/prompt`` and return its raw result.

        ``on_response`` runs inline in the reader as the response is processed, before any later line is read:
        the run freezes its output and stream there (docs/behaviour.md#acp-output-and-freeze).
        """
        outstanding = await self.send_prompt(session_id, blocks, on_response=on_response)
        try:
            return await self.answer(outstanding)
        finally:
            outstanding.forget()  # a cancelled caller leaves nothing behind

    async def send_prompt(
        self, session_id: str, blocks: Sequence[Mapping[str, object]], *, on_response: Callable[[object], None]
    ) -> Outstanding:
        """Write ``session/prompt`` (as :meth:`prompt`) without waiting for its answer (:meth:`answer`)."""
        params = self._with_meta({"sessionId": session_id, "prompt": list(blocks)})
        try:  # mapped inline, not with map_exceptions: this and answer() run on every warm turn
            return await self._peer.send_request("session/prompt", params, on_response=on_response)
        except _REQUEST_ERROR_CLASSES as raw:
            raise _acp_error(raw) from raw

    @staticmethod
    async def answer(outstanding: Outstanding) -> object:
        """Wait for the raw result of a request :meth:`send_prompt` wrote (a cancellation point)."""
        try:
            return await outstanding.result()
        except _REQUEST_ERROR_CLASSES as raw:
            raise _acp_error(raw) from raw

    def _with_meta(self, params: dict[str, Any]) -> dict[str, Any]:
        if self._meta is not None:
            params["_meta"] = dict(self._meta)
        return params

    async def cancel(self, session_id: str) -> None:
        """Send ``session/cancel``; best effort, a dead pipe is ignored."""
        try:
            await self._peer.notify("session/cancel", {"sessionId": session_id})
        except (PeerWriteError, ConnectionClosedError):
            pass

    def _on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method != "session/update":
            return  # extension and unknown notifications are ignored
        update = params.get("update")
        # A decoded JSON object is a plain dict: skip update_of's lenient checks on the streaming hot path.
        if type(update) is dict:
            self._on_update(cast("dict[str, object]", update))
            return
        update = update_of(params)
        if update is not None:
            self._on_update(update)

    async def _answer_permission(self, params: dict[str, Any]) -> object:
        return self._on_permission(params)
