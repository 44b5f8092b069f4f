"""``AcpProvider``: the registered provider entry for one ``kind = "acp"`` config entry.

``start`` checks the pre-abort, resolves the child's cwd (configured, else the parent session's; never the host's
own), logs the spec's host lines, and starts a run through ``start_acp_run``. ``aclose`` disposes every live run,
shielded and bounded; a later ``start`` raises.
"""

from __future__ import annotations

import logging
from typing import Literal

from anyio.abc import TaskGroup

from host._exceptions import ConfigError, SubagentHostError
from host.acp_provider._run import START_ABORTED_MESSAGE, AcpRun, AcpRunSpec, start_acp_run
from host.acp_provider._spec import HOST_LOGGER_NAME
from host.config import AcpEntryConfig
from host.diagnostics import AcpFailureFacts, acp_run_failure
from host.run._contracts import Capabilities, Provider, SubagentRequest
from host.run._entry_provider import EntryProvider
from host.telemetry._config import with_traceparent

__all__ = ["HOST_LOGGER_NAME", "AcpProvider"]


def _configuration_failure(raw: ConfigError) -> SubagentHostError:
    return acp_run_failure(AcpFailureFacts("initialize", "configuration"), raw)


class AcpProvider(Provider):
    """Runs each request in a fresh ACP child (one process per run, no reuse)."""

    def __init__(self, entry: AcpEntryConfig, *, task_group: TaskGroup) -> None:
        """Bind the provider to a validated entry and the host's task group.

        Args:
            entry: the validated config entry (absolute ``cwd`` if configured, expanded ``env``).
            task_group: owns every run's connection and prompt tasks.
        """
        self._config = entry
        self._task_group = task_group
        self._logger = logging.getLogger(HOST_LOGGER_NAME)
        self._entry: EntryProvider[AcpRun] = EntryProvider(
            entry.name,
            configured_cwd=entry.cwd,
            logger=self._logger,
            prefix="subagent-acp",
            start_aborted_message=START_ABORTED_MESSAGE,
            configuration_failure=_configuration_failure,
            build_run=self._build_run,
        )

    @property
    def name(self) -> str:
        """The entry name."""
        return self._entry.name

    @property
    def kind(self) -> Literal["acp"]:
        """Always ``acp``."""
        return "acp"

    @property
    def capabilities(self) -> Capabilities:
        """ACP runs accept no ``agent_options``."""
        return Capabilities(agent_options=False)

    async def start(self, request: SubagentRequest) -> AcpRun:
        """Start a run; returns once the child answered ``session/new``.

        Raises:
            StartAbortedError: the signal was already cancelled (nothing logged or spawned), or fired during startup.
            AcpRunFailure: a safe startup failure (``configuration``, ``process-start``, handshake failures).
            AggregateError: a startup failure or cancellation whose rollback ladder failed too.
            SubagentHostError: the provider was closed.
        """
        return await self._entry.start(request)

    async def aclose(self) -> None:
        """Dispose every live run (shielded; each release is bounded); later ``start`` calls raise. Idempotent."""
        await self._entry.aclose()

    async def _build_run(self, request: SubagentRequest, cwd: str) -> AcpRun:
        entry = self._config
        spec = AcpRunSpec(
            command=entry.command,
            args=tuple(entry.args),
            cwd=cwd,
            env=with_traceparent(entry.env, request.traceparent),
            inherit_env=entry.inherit_env,
            permission=entry.permission,
            initialize_timeout_ms=entry.initialize_timeout_ms,
            dispose_eof_grace_ms=entry.dispose_eof_grace_ms,
            dispose_grace_ms=entry.dispose_grace_ms,
            max_output_bytes=entry.max_output_bytes,
            traceparent=request.traceparent,
        )
        return await start_acp_run(
            request,
            spec,
            task_group=self._task_group,
            on_error=self._entry.log_run_failure,
            provider_name=self.name,
        )
