"""One MCP connection's state, and the context one request is handled in.

A connection is the one stdio connection, one Streamable HTTP session (the handshake era), or one stateless HTTP
request (2026-07-28). Its era is decided by its first request (stdio) or by the transport (HTTP); the handshake era
keeps the negotiated version, the init gate and the level ``logging/setLevel`` chose, per connection.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

from host.mcp._models import RequestMeta
from host.mcp._wire import Era, LoggingLevel

__all__ = ["DEFAULT_LOG_LEVEL", "Connection", "Notify", "RequestContext"]

Notify: TypeAlias = Callable[[str, dict[str, Any]], Awaitable[None]]
"""Sends one notification (``method``, ``params``)."""

DEFAULT_LOG_LEVEL: Final[LoggingLevel] = "info"
"""The level before any ``logging/setLevel``: job completion notices are sent."""


class Connection:
    """The state of one MCP connection (see the module docstring)."""

    def __init__(self, notify: Notify | None = None, *, era: Era | None = None) -> None:
        self.notify = notify
        """The connection's own channel for notifications no request carries (``None``: it has none)."""
        self.era: Era | None = era
        """Decided by the first request when the transport did not decide it."""
        self.protocol_version: str | None = None
        """The version ``initialize`` negotiated (handshake era)."""
        self.initialized = False
        """Whether requests other than ``initialize`` and ``ping`` are served (handshake era)."""
        self.log_level: LoggingLevel = DEFAULT_LOG_LEVEL
        self.closed = False
        """Set by the transport once nothing more can be sent on ``notify``."""


@dataclass(frozen=True, slots=True)
class RequestContext:
    """What a handler knows of its request: the connection, the request's ``_meta`` and its own channel."""

    connection: Connection
    meta: RequestMeta | None
    send: Notify
    """Sends a notification that belongs to this request (progress), ahead of its response."""
