"""``notifications/message``: the server's own notices, filtered by the level each connection chose.

Only lines built from closed facts are sent: a background job's completion notice (``info``, to the connection
that started the job). Other host log lines may quote a child's error text and stay on stderr. The level is per
connection, that is per MCP session: the one stdio connection, or each Streamable HTTP session (its
``Mcp-Session-Id``); ``logging/setLevel`` on one never changes what another receives. The SDK does not filter by
level on handshake versions, so this does; logging is deprecated at 2026-07-28, where the SDK gates it per request
and emits ``MCPDeprecationWarning``, which is silenced here.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections import OrderedDict
from typing import Any, Final, TypeAlias

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.shared.exceptions import MCPDeprecationWarning
from starlette.requests import Request

__all__ = ["DEFAULT_LOG_LEVEL", "LOGGER_NAME", "Notices"]

logger = logging.getLogger(__name__)

LOGGER_NAME: Final = "subagent-host"
"""The ``logger`` of every notice."""
DEFAULT_LOG_LEVEL: Final[types.LoggingLevel] = "info"
"""The level before any ``logging/setLevel``: job completion notices are sent."""

_ORDER: Final[tuple[types.LoggingLevel, ...]] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)

_MAX_LEVELS: Final = 10_000
"""How many connections' levels are kept (the SDK's own session limit); beyond it the oldest setting is dropped."""

_Connection: TypeAlias = str | None
"""A request's connection: its Streamable HTTP session id, or ``None`` for the one stdio connection."""
_Notice: TypeAlias = tuple[ServerSession, _Connection, types.LoggingLevel, str]


def connection_of(ctx: ServerRequestContext[Any]) -> _Connection:
    """The connection (MCP session) that sent the request of ``ctx``."""
    request: object = ctx.request
    if isinstance(request, Request):
        return request.headers.get(MCP_SESSION_ID_HEADER)
    return None


class Notices:
    """Queues notices for their connection and sends those at or above that connection's level, in order."""

    def __init__(self) -> None:
        self._levels: OrderedDict[_Connection, types.LoggingLevel] = OrderedDict()
        self._job_owners: dict[str, tuple[ServerSession, _Connection]] = {}
        self._send, self._receive = anyio.create_memory_object_stream[_Notice](math.inf)

    def set_level(self, ctx: ServerRequestContext[Any], level: types.LoggingLevel) -> None:
        """Send the connection of ``ctx`` only notices at ``level`` or above from now on."""
        connection = connection_of(ctx)
        self._levels[connection] = level
        self._levels.move_to_end(connection)
        while len(self._levels) > _MAX_LEVELS:
            self._levels.popitem(last=False)

    def enabled(self, connection: _Connection, level: types.LoggingLevel) -> bool:
        """Whether a notice at ``level`` is sent to ``connection`` (``DEFAULT_LOG_LEVEL`` until it set one)."""
        return _ORDER.index(level) >= _ORDER.index(self._levels.get(connection, DEFAULT_LOG_LEVEL))

    def own_job(self, job_id: str, ctx: ServerRequestContext[Any]) -> None:
        """Route ``job_id``'s completion notice to the connection of ``ctx``."""
        self._job_owners[job_id] = (ctx.session, connection_of(ctx))

    def on_job_done(self, job_id: str, notice: str) -> None:
        """The host's job listener: queue the completion notice for the job's connection."""
        owner = self._job_owners.pop(job_id, None)
        if owner is not None:
            session, connection = owner
            self.post(session, connection, "info", notice)

    def post(self, session: ServerSession, connection: _Connection, level: types.LoggingLevel, text: str) -> None:
        """Queue ``text`` for ``connection`` (sent through ``session``) when ``level`` is enabled there."""
        if self.enabled(connection, level):
            self._send.send_nowait((session, connection, level, text))

    async def run(self) -> None:
        """Send queued notices until cancelled."""
        async for session, connection, level, text in self._receive:
            if not self.enabled(connection, level):
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", MCPDeprecationWarning)
                    await session.send_log_message(level, text, logger=LOGGER_NAME)  # pyright: ignore[reportDeprecated]
            except Exception:  # containment boundary: a closed connection never stops the server
                logger.debug("subagent-host serve: a notice could not be sent", exc_info=True)
