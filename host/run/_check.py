"""``check``: spawn one entry's child, run its handshake (no prompt), tear it down, and report what was seen.

ACP: ``initialize`` then ``session/new``; DSH SDK: ``initialize``. Both are bounded by the entry's
``initialize_timeout_ms``. The child's stderr is captured (never inherited). A failure is reported only as the
closed failure line of its kind, classified exactly as a run classifies the same failure at the same stage
(docs/behaviour.md#host-one-classification): an ACP error answer or a closed connection is ``process-exit`` with
its exit facts when the child exited within ``dispose_grace_ms``, else ``transport``; a DSH SDK spawn failure or
closed connection is ``transport``, an error answer or a result without ``serverInfo`` is ``protocol``. The
agent's name, version, protocol version and auth method ids are returned as the operator's facts (they are child
text: callers print them sanitised, never into a model-visible place).
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
    acp_failure_line,
    sdk_failure_line,
)
from host.jsonrpc import JsonRpcPeer
from host.process import ManagedProcess, ProcessOutcome, build_child_env, run_teardown_ladder, spawn_managed
from host.run._attempt import read_agent_info

__all__ = ["CheckReport", "check_entry"]

_ACP_PROTOCOL_VERSION: Final = 1
_AUTH_REQUIRED_CODE: Final = -32000


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
    """The child's newest stderr lines (host-only; for the operator, never model-visible)."""
    exit_code: int | None = None
    """The child's exit status, once its exit was observed (after the teardown at the latest)."""
    signal: str | None = None
    """The signal that ended the child, once its exit was observed."""
    non_json_lines: int = 0
    """How many non-blank lines the child wrote to stdout that were no JSON-RPC message."""

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
            # A run classifies a spawn failure the same way: ACP `process-start`, DSH SDK `transport`.
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
            _note_exit(report, handle.outcome)
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
                info = read_agent_info(await peer.request("initialize", params), acp=acp)
                report.agent_name, report.agent_version = info.name, info.version
                report.protocol_version, report.auth_methods = info.protocol_version, list(info.auth_methods)
                report.timings_ms["initialize"] = _ms_since(step)
                if not acp and (info.name is None or info.version is None):
                    report.diagnostic = _failure(entry, stage, "protocol")  # the run's SdkProtocolError
                if acp:
                    stage = "new-session"
                    step = time.monotonic()
                    created = await peer.request("session/new", {"cwd": cwd, "mcpServers": []})
                    if session_id_of(created) is None:
                        report.diagnostic = _failure(entry, stage, "protocol")
                    report.timings_ms["session/new"] = _ms_since(step)
        except TimeoutError:
            report.diagnostic = _failure(entry, stage, "timeout")
        except ResponseError as raw:
            if acp and raw.code == _AUTH_REQUIRED_CODE:
                report.diagnostic = _failure(entry, stage, "auth-required")
            elif acp:
                report.diagnostic = await _exit_or_transport(entry, handle, stage)
            else:
                report.diagnostic = _failure(entry, stage, "protocol")
        except (ConnectionClosedError, PeerWriteError):
            report.diagnostic = await _exit_or_transport(entry, handle, stage)
        finally:
            report.non_json_lines = peer.non_json.count
            peer.close()
            group.cancel_scope.cancel()


async def _exit_or_transport(entry: EntryConfig, handle: ManagedProcess, stage: AcpStage) -> str:
    """As a run: an ACP child that exited within ``dispose_grace_ms`` is ``process-exit`` with its exit facts."""
    if not isinstance(entry, AcpEntryConfig):
        return _failure(entry, stage, "transport")
    outcome = handle.outcome
    if outcome is None:
        with anyio.move_on_after(math.ceil(entry.dispose_grace_ms) / 1000):
            outcome = await handle.wait_outcome()
    if outcome is None:
        return _failure(entry, stage, "transport")
    facts = AcpFailureFacts(stage, "process-exit", exit_code=outcome.exit_code, signal=outcome.signal)
    return acp_failure_line(facts)


def session_id_of(created: object) -> str | None:
    """The ``sessionId`` of a ``session/new`` result, if it is a string (leniently, as a run reads it)."""
    if not isinstance(created, dict):
        return None
    session_id = cast("dict[str, object]", created).get("sessionId")
    return session_id if isinstance(session_id, str) else None


def _note_exit(report: CheckReport, outcome: ProcessOutcome | None) -> None:
    if outcome is not None:
        report.exit_code, report.signal = outcome.exit_code, outcome.signal


def _failure(entry: EntryConfig, stage: AcpStage, category: AcpCategory) -> str:
    """The closed failure line of the entry's kind; for the DSH SDK, the run's stage and category."""
    if isinstance(entry, AcpEntryConfig):
        return acp_failure_line(AcpFailureFacts(stage, category))
    if stage == "teardown":
        return sdk_failure_line("shutdown", "unknown")
    sdk_category: SdkCategory = category if category in ("protocol", "transport", "timeout") else "transport"
    return sdk_failure_line("initialize", sdk_category)


def _ms_since(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 1)
