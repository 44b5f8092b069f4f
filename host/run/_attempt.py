"""What a run tells its recorder before it is published: its id before the spawn, and its handshake facts.

A provider's run calls its request's ``on_attempt`` observer (host-only, never model-visible and never sent to a
child): ``announce(run_id, run)`` right before the spawn, ``handshake(facts)`` once the handshake passed (before
publication), and ``start_failed()`` as soon as a startup failure or an abort was decided, before its rollback
teardown. The run records (``host.records``) are its only user; an observer that raises is logged and never
changes the run. ``read_agent_info`` reads the agent's self-description out of an ``initialize`` result, the same
way for a run and for ``check``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, cast

__all__ = ["AgentInfo", "AttemptObserver", "HandshakeFacts", "PhaseClock", "notify_attempt", "read_agent_info"]

logger = logging.getLogger(__name__)

_FACT_LIMIT: Final = 200
"""Longest agent-supplied string kept (name, version, auth method id)."""
_MAX_AUTH_METHODS: Final = 20


@dataclass(frozen=True, slots=True)
class AgentInfo:
    """The agent's self-description from ``initialize`` (child text: printed neutralised, never model-visible)."""

    name: str | None = None
    version: str | None = None
    protocol_version: int | None = None
    auth_methods: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class HandshakeFacts:
    """What the ``handshake`` record holds: the step timings and the agent's self-description."""

    timings_ms: dict[str, float] = field(default_factory=dict[str, float])
    """``spawn``, ``initialize`` and (ACP) ``session/new``, in milliseconds (one decimal)."""
    agent: AgentInfo = AgentInfo()

    def record_data(self) -> dict[str, Any]:
        """The ``handshake`` record's ``data``: ``{timings_ms, agent_name?, agent_version?, protocol_version?}``."""
        data: dict[str, Any] = {"timings_ms": dict(self.timings_ms)}
        facts = {
            "agent_name": self.agent.name,
            "agent_version": self.agent.version,
            "protocol_version": self.agent.protocol_version,
        }
        data.update({key: value for key, value in facts.items() if value is not None})
        return data


class AttemptObserver(Protocol):
    """Host-only observer of one run's start (the run records)."""

    def announce(self, run_id: str, run: object) -> None:
        """The run's id and the run itself (its child facts), right before its child is spawned."""
        ...

    def handshake(self, facts: HandshakeFacts) -> None:
        """The handshake passed; called before the run is published."""
        ...

    def start_failed(self) -> None:
        """The start failed or was aborted; called before the rollback teardown."""
        ...


def notify_attempt(observer: AttemptObserver | None, method: str, *args: object) -> None:
    """Call ``observer.<method>(*args)``; a raising observer is logged and changes nothing."""
    if observer is None:
        return
    try:
        getattr(observer, method)(*args)
    except Exception:  # containment boundary: a record observer never changes the run
        logger.exception("subagent-host: attempt observer failed")


class PhaseClock:
    """Step timings of one handshake, in milliseconds since the previous mark (one decimal)."""

    def __init__(self) -> None:
        self._last = time.monotonic()
        self.timings_ms: dict[str, float] = {}

    def mark(self, step: str) -> None:
        """Record ``step`` as the time since the previous mark (or since the clock was made)."""
        now = time.monotonic()
        self.timings_ms[step] = round((now - self._last) * 1000, 1)
        self._last = now

    def facts(self, agent: AgentInfo) -> HandshakeFacts:
        """The ``handshake`` facts: these timings and the agent's self-description."""
        return HandshakeFacts(timings_ms=dict(self.timings_ms), agent=agent)


def read_agent_info(result: object, *, acp: bool) -> AgentInfo:
    """Copy the agent's self-description out of an ``initialize`` result, leniently and bounded."""
    body = _object(result)
    if body is None:
        return AgentInfo()
    info = _object(body.get("agentInfo" if acp else "serverInfo"))
    name = version = None
    if info is not None:
        name = _short(info.get("name"))
        version = _short(info.get("version"))
    protocol = body.get("protocolVersion")
    methods = body.get("authMethods")
    auth: list[str] = []
    if isinstance(methods, list):
        ids = [_short(method.get("id")) for method in map(_object, cast("list[object]", methods)) if method]
        auth = [method_id for method_id in ids if method_id is not None][:_MAX_AUTH_METHODS]
    return AgentInfo(name, version, protocol if type(protocol) is int else None, tuple(auth))


def _object(value: object) -> dict[str, object] | None:
    return cast("dict[str, object]", value) if isinstance(value, dict) else None


def _short(value: object) -> str | None:
    return value[:_FACT_LIMIT] if isinstance(value, str) else None
