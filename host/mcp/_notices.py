"""``notifications/message``: the server's own notices, filtered by the level each connection chose.

Only lines built from closed facts are sent: a background job's completion notice (``info``, to the connection that
started the job). Other host log lines may quote a child's error text and stay on stderr. The level is per
connection, that is per MCP session: the one stdio connection, or each Streamable HTTP session; ``logging/setLevel``
on one never changes what another receives. Only handshake-era connections get notices: at 2026-07-28 a log message
may travel only on the stream of the request that asked for it, and a job finishes after its start was answered.
"""

from __future__ import annotations

import logging
import math
from typing import Final, TypeAlias

import anyio

from host.mcp._connection import Connection
from host.mcp._wire import LOG_LEVELS, LoggingLevel

__all__ = ["LOGGER_NAME", "Notices"]

logger = logging.getLogger(__name__)

LOGGER_NAME: Final = "subagent-host"
"""The ``logger`` of every notice."""

_Notice: TypeAlias = tuple[Connection, LoggingLevel, str]


def enabled(connection: Connection, level: LoggingLevel) -> bool:
    """Whether a notice at ``level`` is sent to ``connection``."""
    if connection.era != "handshake" or connection.closed or connection.notify is None:
        return False
    return LOG_LEVELS.index(level) >= LOG_LEVELS.index(connection.log_level)


class Notices:
    """Queues notices for their connection and sends those at or above that connection's level, in order."""

    def __init__(self) -> None:
        self._job_owners: dict[str, Connection] = {}
        self._send, self._receive = anyio.create_memory_object_stream[_Notice](math.inf)

    def own_job(self, job_id: str, connection: Connection) -> None:
        """Route ``job_id``'s completion notice to ``connection``."""
        if connection.era == "handshake":
            self._job_owners[job_id] = connection

    def on_job_done(self, job_id: str, notice: str) -> None:
        """The host's job listener: queue the completion notice for the job's connection."""
        owner = self._job_owners.pop(job_id, None)
        if owner is not None and enabled(owner, "info"):
            self._send.send_nowait((owner, "info", notice))

    async def run(self) -> None:
        """Send queued notices until cancelled."""
        async for connection, level, text in self._receive:
            if not enabled(connection, level) or connection.notify is None:
                continue
            try:
                await connection.notify("notifications/message", {"level": level, "logger": LOGGER_NAME, "data": text})
            except Exception:  # containment boundary: a closed connection never stops the server
                logger.debug("subagent-host serve: a notice could not be sent", exc_info=True)
