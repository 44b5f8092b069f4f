"""``AcpProvider``: the registered provider entry for one ``kind = "acp"`` config entry.

``start`` checks the pre-abort, resolves the child's cwd (configured, else the parent session's; never the host's
own), logs the spec's host lines, and starts a run through ``start_acp_run``. ``aclose`` disposes every live run,
shielded and bounded; a later ``start`` raises.
"""

from __future__ import annotations

import logging
import os
import stat
from typing import Final, Literal

import anyio
from anyio.abc import TaskGroup

from host._exceptions import ConfigError, StartAbortedError, SubagentHostError
from host._run import Capabilities, Provider, SubagentRequest, SubagentRun
from host.acp_provider._run import START_ABORTED_MESSAGE, AcpRun, AcpRunSpec, start_acp_run
from host.config import AcpEntryConfig
from host.diagnostics import AcpFailureFacts, acp_run_failure

__all__ = ["HOST_LOGGER_NAME", "AcpProvider"]

HOST_LOGGER_NAME: Final = "host.acp_provider"
"""The logger that receives the provider's host lines unless another one is passed."""

_NO_CWD: Final = (
    "subagent-acp: no working directory for the child — configure `cwd` or delegate from a parent session that has one"
)
_CWD_NOT_ABSOLUTE: Final = "subagent-acp: parent session cwd must be an absolute path: {cwd}"
_CWD_NOT_ACCESSIBLE: Final = "subagent-acp: parent session cwd is not an accessible directory: {cwd}"
_START_FAILED_LOG: Final = 'subagent-acp "%s": child start failed: %r'
_RUN_FAILED_LOG: Final = 'subagent-acp "%s": child run failed (%s): %s'
_CLOSED_MESSAGE: Final = 'subagent provider "{name}" is closed'


def _resolve_parent_cwd(parent_cwd: str | None) -> str:
    """The parent session cwd, validated; raises the raw, host-only ``ConfigError`` of §3 step 2."""
    if parent_cwd is None:
        raise ConfigError(_NO_CWD)
    if not os.path.isabs(parent_cwd):
        raise ConfigError(_CWD_NOT_ABSOLUTE.format(cwd=parent_cwd))
    try:
        is_dir = stat.S_ISDIR(os.stat(parent_cwd).st_mode)
    except (OSError, ValueError):
        is_dir = False
    if not is_dir or not os.access(parent_cwd, os.X_OK):
        raise ConfigError(_CWD_NOT_ACCESSIBLE.format(cwd=parent_cwd))
    return parent_cwd


class AcpProvider(Provider):
    """Runs each request in a fresh ACP child (one process per run, no reuse)."""

    def __init__(self, entry: AcpEntryConfig, *, task_group: TaskGroup, logger: logging.Logger | None = None) -> None:
        """Bind the provider to a validated entry and the host's task group.

        Args:
            entry: the validated config entry (absolute ``cwd`` if configured, expanded ``env``).
            task_group: owns every run's reader and prompt tasks.
            logger: the host logger; ``host.acp_provider`` by default.
        """
        self._entry = entry
        self._task_group = task_group
        self._logger = logger if logger is not None else logging.getLogger(HOST_LOGGER_NAME)
        self._runs: list[AcpRun] = []
        self._closed = False

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

    async def start(self, request: SubagentRequest) -> SubagentRun:
        """Start a run; returns once the child answered ``session/new``.

        Raises:
            StartAbortedError: the signal was already cancelled (nothing logged or spawned), or fired during startup.
            AcpRunFailure: a safe startup failure (``configuration``, ``process-start``, handshake failures).
            AggregateError: a startup failure or cancellation whose rollback ladder failed too.
            SubagentHostError: the provider was closed.
        """
        if self._closed:
            raise SubagentHostError(_CLOSED_MESSAGE.format(name=self.name))
        if request.signal.cancelled:
            raise StartAbortedError(START_ABORTED_MESSAGE)
        try:
            cwd = self._entry.cwd if self._entry.cwd is not None else _resolve_parent_cwd(request.parent_cwd)
        except ConfigError as raw:
            self._logger.warning(_START_FAILED_LOG, self.name, raw)
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
        self._runs = [live for live in self._runs if not live.disposed]
        self._runs.append(run)
        if self._closed:  # closed while this run was starting: it must not outlive the provider
            await self._dispose_contained(run)
            raise SubagentHostError(_CLOSED_MESSAGE.format(name=self.name))
        return run

    async def aclose(self) -> None:
        """Dispose every live run (shielded; each ladder is bounded); later ``start`` calls raise. Idempotent."""
        self._closed = True
        runs, self._runs = self._runs, []
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as group:
                for run in runs:
                    group.start_soon(self._dispose_contained, run)

    async def _dispose_contained(self, run: AcpRun) -> None:
        try:
            await run.dispose()
        except SubagentHostError:
            # Already reported through the error sink (the `child run failed` line).
            pass

    def _log_run_failure(self, error: BaseException, stop_reason: Literal["error"]) -> None:
        self._logger.warning(_RUN_FAILED_LOG, self.name, stop_reason, error)
