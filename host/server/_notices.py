"""``notifications/message``: the server's own notices, filtered by the level each connection chose.

Only lines built from closed facts are sent: a background job's completion notice (``info``, to the connection
that started the job). Other host log lines may quote a child's error text and stay on stderr. The level is per
connection (an MCP session: the one stdio connection, or each Streamable HTTP session): ``logging/setLevel`` on one
never changes what another receives. The SDK does not filter by level on handshake versions, so this does; logging
is deprecated at 2026-07-28, where the SDK gates it per request and emits ``MCPDeprecationWarning``, which is
silenced here.
"""

from __future__ import annotations

import logging
import math
import warnings
import weakref
from typing import Final, TypeAlias

import anyio
import mcp_types as types
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPDeprecationWarning

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

_Notice: TypeAlias = tuple[ServerSession, types.LoggingLevel, str]


class Notices:
    """Queues notices for their connection and sends those at or above that connection's level, in order."""

    def __init__(self) -> None:
        # Weak: a closed HTTP session's level goes with it.
        self._levels: weakref.WeakKeyDictionary[ServerSession, types.LoggingLevel] = weakref.WeakKeyDictionary()
        self._job_sessions: dict[str, ServerSession] = {}
        self._send, self._receive = anyio.create_memory_object_stream[_Notice](math.inf)

    def set_level(self, session: ServerSession, level: types.LoggingLevel) -> None:
        """Send ``session``'s connection only notices at ``level`` or above from now on."""
        self._levels[session] = level

    def enabled(self, session: ServerSession, level: types.LoggingLevel) -> bool:
        """Whether a notice at ``level`` is sent to ``session``'s connection (``DEFAULT_LOG_LEVEL`` until set)."""
        return _ORDER.index(level) >= _ORDER.index(self._levels.get(session, DEFAULT_LOG_LEVEL))

    def own_job(self, job_id: str, session: ServerSession) -> None:
        """Route ``job_id``'s completion notice to the connection of ``session``."""
        self._job_sessions[job_id] = session

    def on_job_done(self, job_id: str, notice: str) -> None:
        """The host's job listener: queue the completion notice for the job's connection."""
        session = self._job_sessions.pop(job_id, None)
        if session is not None:
            self.post(session, "info", notice)

    def post(self, session: ServerSession, level: types.LoggingLevel, text: str) -> None:
        """Queue ``text`` for ``session``'s connection when ``level`` is enabled there."""
        if self.enabled(session, level):
            self._send.send_nowait((session, level, text))

    async def run(self) -> None:
        """Send queued notices until cancelled."""
        async for session, level, text in self._receive:
            if not self.enabled(session, level):
                continue
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", MCPDeprecationWarning)
                    await session.send_log_message(level, text, logger=LOGGER_NAME)  # pyright: ignore[reportDeprecated]
            except Exception:  # containment boundary: a closed connection never stops the server
                logger.debug("subagent-host serve: a notice could not be sent", exc_info=True)
