"""``check``: spawn one entry's child, run its handshake (no prompt), tear it down, and report what was seen.

ACP: ``initialize`` then ``session/new``; DSH SDK: ``initialize``. Both are bounded by the entry's
``initialize_timeout_ms``. The child's stderr is captured (never inherited). A failure is reported only as the
closed failure line of its kind; the agent's name, version, protocol version and auth method ids are returned as
the operator's facts (they are child text: callers print them sanitised, never into a model-visible place).
"""

from __future__ import annotations

import math
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Final, cast

import anyio

from host._exceptions import ConnectionClosedError, PeerWriteError, ResponseError
from host.config import AcpEntryConfig, EntryConfig
from host.diagnostics import (
    AcpCategory,
    AcpFailureFacts,
    AcpStage,
    SdkCategory,
    SdkStage,
    acp_failure_line,
    sdk_failure_line,
)
from host.jsonrpc import JsonRpcPeer
from host.process import ManagedProcess, build_child_env, run_teardown_ladder, spawn_managed

__all__ = ["CheckReport", "check_entry"]

_ACP_PROTOCOL_VERSION: Final = 1
_AUTH_REQUIRED_CODE: Final = -32000
_SDK_CATEGORIES: Final[dict[str, SdkCategory]] = {
    "protocol": "protocol",
    "transport": "transport",
    "timeout": "timeout",
}
_FACT_LIMIT: Final = 200
"""Longest agent-supplied string kept (name, version, auth method id)."""


@dataclass(slots=True)
class CheckReport:
    """What one check observed; ``diagnostic`` is ``None`` exactly when the handshake passed."""

    name: str
    kind: str
    timings_ms: dict[str, float] = field(default_factory=dict[str, float])
    agent_name: str | None = None
    agent_version: str | None = None
    protocol_version: int | None = None
    auth_methods: list[str] = field(default_factory=list[str])
    diagnostic: str | None = None
    stderr_tail: tuple[str, ...] = ()
    """The child's newest stderr lines (host-only; for the operator at debug level)."""

    @property
    def ok(self) -> bool:
        """Whether the handshake passed."""
        return self.diagnostic is None


async def check_entry(entry: EntryConfig, *, cwd: str) -> CheckReport:
    """Spawn ``entry``'s child in ``cwd``, handshake, tear down; never raises for a child's misbehaviour."""
    report = CheckReport(entry.name, entry.kind)
    started = time.monotonic()
    async with anyio.create_task_group() as group:
        try:
            handle = await spawn_managed(
                [entry.command, *entry.args],
                cwd=entry.cwd or cwd,
                env=build_child_env(entry.env, inherit=entry.inherit_env),
                task_group=group,
                grace_ms=entry.dispose_grace_ms,
                capture_stderr=True,
            )
        except OSError:
            report.diagnostic = _failure(entry, "process", "process-start")
            return report
        report.timings_ms["spawn"] = _ms_since(started)
        try:
            await _handshake(entry, handle, report, cwd=entry.cwd or cwd)
        finally:
            teardown_started = time.monotonic()
            with anyio.CancelScope(shield=True):
                try:
                    await run_teardown_ladder(
                        handle, eof_grace_ms=entry.dispose_eof_grace_ms, aggregate_message="check teardown failed"
                    )
                except Exception:  # the check's verdict is the handshake's; a teardown failure is logged by it
                    report.diagnostic = report.diagnostic or _failure(entry, "teardown", "unknown")
            report.timings_ms["teardown"] = _ms_since(teardown_started)
            report.stderr_tail = handle.stderr_tail
            group.cancel_scope.cancel()
    return report


async def _handshake(entry: EntryConfig, handle: ManagedProcess, report: CheckReport, *, cwd: str) -> None:
    acp = isinstance(entry, AcpEntryConfig)
    if acp:
        peer = JsonRpcPeer(send=handle.stdin, receive=handle.stdout)
    else:
        peer = JsonRpcPeer(send=handle.stdin, receive=handle.stdout, next_id=lambda: f"req_{uuid.uuid4().hex}")
    async with anyio.create_task_group() as group:
        group.start_soon(peer.run)
        stage: AcpStage = "initialize"
        try:
            with anyio.fail_after(math.ceil(entry.initialize_timeout_ms) / 1000):
                step = time.monotonic()
                if acp:
                    params: dict[str, Any] = {
                        "protocolVersion": _ACP_PROTOCOL_VERSION,
                        "clientCapabilities": {},
                        "clientInfo": {"name": "subagent-host", "version": "check"},
                    }
                else:
                    params = {"cwd": cwd, "provider": entry.provider, "model": entry.model}
                _read_initialize(await peer.request("initialize", params), report, acp=acp)
                report.timings_ms["initialize"] = _ms_since(step)
                if acp:
                    stage = "new-session"
                    step = time.monotonic()
                    created = await peer.request("session/new", {"cwd": cwd, "mcpServers": []})
                    session = _object(created)
                    if session is None or not isinstance(session.get("sessionId"), str):
                        report.diagnostic = _failure(entry, stage, "protocol")
                    report.timings_ms["session/new"] = _ms_since(step)
        except TimeoutError:
            report.diagnostic = _failure(entry, stage, "timeout")
        except ResponseError as raw:
            category: AcpCategory = "auth-required" if acp and raw.code == _AUTH_REQUIRED_CODE else "protocol"
            report.diagnostic = _failure(entry, stage, category)
        except (ConnectionClosedError, PeerWriteError):
            report.diagnostic = _failure(entry, stage, "transport")
        finally:
            peer.close()
            group.cancel_scope.cancel()


def _read_initialize(result: object, report: CheckReport, *, acp: bool) -> None:
    """Copy the agent's self-description out of an ``initialize`` result, leniently and bounded."""
    body = _object(result)
    if body is None:
        return
    info = _object(body.get("agentInfo" if acp else "serverInfo"))
    if info is not None:
        report.agent_name = _short(info.get("name"))
        report.agent_version = _short(info.get("version"))
    version = body.get("protocolVersion")
    if type(version) is int:
        report.protocol_version = version
    methods = body.get("authMethods")
    if isinstance(methods, list):
        ids = [_short(method.get("id")) for method in map(_object, cast("list[object]", methods)) if method]
        report.auth_methods = [method_id for method_id in ids if method_id is not None][:20]


def _object(value: object) -> dict[str, object] | None:
    return cast("dict[str, object]", value) if isinstance(value, dict) else None


def _short(value: object) -> str | None:
    return value[:_FACT_LIMIT] if isinstance(value, str) else None


def _failure(entry: EntryConfig, stage: AcpStage, category: AcpCategory) -> str:
    """The closed failure line of the entry's kind; for the DSH SDK, its nearest stage and category."""
    if isinstance(entry, AcpEntryConfig):
        return acp_failure_line(AcpFailureFacts(stage, category))
    sdk_stage: SdkStage = "shutdown" if stage == "teardown" else "initialize"
    return sdk_failure_line(sdk_stage, _SDK_CATEGORIES.get(category, "unknown"))


def _ms_since(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 1)
