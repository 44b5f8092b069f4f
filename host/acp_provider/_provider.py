"""``AcpProvider``: the registered provider entry for one ``kind = "acp"`` config entry.

``start`` checks the pre-abort, resolves the child's cwd (configured, else the parent session's; never the host's
own), logs the spec's host lines, and starts a run through ``start_acp_run``. ``aclose`` disposes every live run,
shielded and bounded; a later ``start`` raises.
"""

from __future__ import annotations

import logging
from typing import Final, Literal

from anyio.abc import TaskGroup

from host._exceptions import ConfigError
from host._provider_support import EntryProvider
from host._run import Capabilities, Provider, SubagentRequest, SubagentRun
from host.acp_provider._run import START_ABORTED_MESSAGE, AcpRun, AcpRunSpec, start_acp_run
from host.config import AcpEntryConfig
from host.diagnostics import AcpFailureFacts, acp_run_failure

__all__ = ["HOST_LOGGER_NAME", "AcpProvider"]

HOST_LOGGER_NAME: Final = "host.acp_provider"
"""The logger that receives the provider's host lines unless another one is passed."""


class AcpProvider(EntryProvider, Provider):
    """Runs each request in a fresh ACP child (one process per run, no reuse)."""

    def __init__(self, entry: AcpEntryConfig, *, task_group: TaskGroup, logger: logging.Logger | None = None) -> None:
        """Bind the provider to a validated entry and the host's task group.

        Args:
            entry: the validated config entry (absolute ``cwd`` if configured, expanded ``env``).
            task_group: owns every run's reader and prompt tasks.
            logger: the host logger; ``host.acp_provider`` by default.
        """
        super().__init__(
            entry.name,
            task_group=task_group,
            logger=logger if logger is not None else logging.getLogger(HOST_LOGGER_NAME),
            prefix="subagent-acp",
            start_aborted_message=START_ABORTED_MESSAGE,
        )
        self._entry = entry

    @property
    def kind(self) -> Literal["acp"]:
        """Always ``acp``."""
        return "acp"

    @property
    def capabilities(self) -> Capabilities:
        """ACP runs accept no ``agent_options``."""
        return Capabilities(agent_options=False)

    async def start(self, request: SubagentRequest) -> SubagentRun:
        """Start a run; returns once the child answered ``session/new``.

        Raises:
            StartAbortedError: the signal was already cancelled (nothing logged or spawned), or fired during startup.
            AcpRunFailure: a safe startup failure (``configuration``, ``process-start``, handshake failures).
            AggregateError: a startup failure or cancellation whose rollback ladder failed too.
            SubagentHostError: the provider was closed.
        """
        self._check_startable(request)
        try:
            cwd = self._child_cwd(self._entry.cwd, request)
        except ConfigError as raw:
            raise acp_run_failure(AcpFailureFacts("initialize", "configuration"), raw) from raw
        spec = AcpRunSpec(
            command=self._entry.command,
            args=tuple(self._entry.args),
            cwd=cwd,
            env=dict(self._entry.env),
            permission=self._entry.permission,
            dispose_eof_grace_ms=self._entry.dispose_eof_grace_ms,
            dispose_grace_ms=self._entry.dispose_grace_ms,
        )
        run = await start_acp_run(
            request, spec, task_group=self._task_group, on_error=self._log_run_failure, provider_name=self.name
        )
        assert isinstance(run, AcpRun)
        await self._adopt(run)
        return run
