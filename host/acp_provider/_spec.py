"""What one ACP run is given (``AcpRunSpec``), its default spawn, and the startup failure facts it classifies."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from anyio.abc import TaskGroup

from host._exceptions import AcpResponseError
from host.acp_provider._wire import AUTH_REQUIRED_CODE
from host.config import ACP_INITIALIZE_TIMEOUT_MS, DISPOSE_EOF_GRACE_MS, DISPOSE_GRACE_MS, MAX_OUTPUT_BYTES, InheritEnv
from host.diagnostics import AcpFailureFacts, AcpStage, PermissionPolicy
from host.process import ProcessHandle, ProcessOutcome, spawn_managed

__all__ = [
    "HOST_LOGGER_NAME",
    "NO_SESSION_ID_MESSAGE",
    "AcpRunSpec",
    "StartupFailure",
    "exit_facts",
    "is_auth_required",
    "spawn_capturing_stderr",
]

NO_SESSION_ID_MESSAGE: Final = "ACP child published without a session id"
"""Raw cause of the ``new-session; protocol`` failure (host-only)."""
HOST_LOGGER_NAME: Final = "host.acp_provider"
"""The ACP provider's host logger: its host lines, and each captured stderr line of its children (debug)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AcpRunSpec:
    """Everything one run needs, already resolved: an absolute cwd and ``${NAME}``-expanded explicit env."""

    command: str
    """``argv[0]``; a name without ``/`` is looked up on the child environment's ``PATH``."""
    args: tuple[str, ...] = ()
    """``argv[1:]``."""
    cwd: str
    """Absolute: the child's cwd and the ``session/new`` ``cwd``."""
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    """Explicit child variables, merged over the filtered ambient environment."""
    inherit_env: InheritEnv = "scrubbed"
    """Which ambient variables the child inherits (``build_child_env``'s ``inherit``)."""
    permission: PermissionPolicy = "reject"
    """The unattended permission policy."""
    initialize_timeout_ms: float = ACP_INITIALIZE_TIMEOUT_MS
    """One bound on the ``initialize`` and ``session/new`` response waits together (``ceil`` ms)."""
    dispose_eof_grace_ms: float = DISPOSE_EOF_GRACE_MS
    """Ladder: how long the child may take to exit after stdin EOF."""
    dispose_grace_ms: float = DISPOSE_GRACE_MS
    """Ladder SIGTERM→SIGKILL grace and reap bound; also bounds observing exit facts (``ceil`` ms)."""
    max_output_bytes: int = MAX_OUTPUT_BYTES  # past it the run ends `error` / `output-limit`
    traceparent: str | None = None
    """The run's W3C trace context, sent as ``_meta.traceparent`` on every request (``None``: no ``_meta``)."""


@dataclass(frozen=True, slots=True)
class StartupFailure:
    """A failed handshake request: its stage, the raw error, and facts when they need no exit observation."""

    stage: AcpStage
    raw: BaseException
    facts: AcpFailureFacts | None = None


def exit_facts(stage: AcpStage, outcome: ProcessOutcome) -> AcpFailureFacts:
    return AcpFailureFacts(stage, "process-exit", exit_code=outcome.exit_code, signal=outcome.signal)


def is_auth_required(raw: BaseException) -> bool:
    return isinstance(raw, AcpResponseError) and type(raw.code) is int and raw.code == AUTH_REQUIRED_CODE


async def spawn_capturing_stderr(
    argv: Sequence[str], *, cwd: str, env: Mapping[str, str], task_group: TaskGroup, grace_ms: float
) -> ProcessHandle:
    """The spawn of every ACP run: the child's stderr is drained into a bounded tail (host-only), never inherited,
    each line logged at debug level to the host logger ``host.acp_provider``."""
    return await spawn_managed(
        argv,
        cwd=cwd,
        env=env,
        task_group=task_group,
        grace_ms=grace_ms,
        capture_stderr=True,
        stderr_logger=logging.getLogger(HOST_LOGGER_NAME),
    )
