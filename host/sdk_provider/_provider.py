"""``DshSdkProvider``: the registered provider entry for one ``kind = "dsh-sdk"`` config entry.

``start`` checks the pre-abort first, resolves the child's cwd (configured, else the parent session's; never the
host's own), builds the run's spec from the entry and starts it through ``start_sdk_run``, wiring the error sink to
the host logger (§5.10). ``aclose`` disposes every live run, shielded and bounded; a later ``start`` raises.
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
from host.config import SdkEntryConfig
from host.diagnostics import sdk_run_failure
from host.sdk_provider._run import START_ABORTED_MESSAGE, ClientFactory, SdkRun, start_sdk_run
from host.sdk_provider.client import SdkClient, SdkRunSpec

__all__ = ["HOST_LOGGER_NAME", "DshSdkProvider"]

HOST_LOGGER_NAME: Final = "host.sdk_provider"
"""The logger that receives the provider's host lines unless another one is passed."""

_NO_CWD: Final = (
    "subagent-dsh-sdk: no working directory for the child — configure `cwd` or delegate from a parent session "
    "that has one"
)
_CWD_NOT_ABSOLUTE: Final = "subagent-dsh-sdk: parent session cwd must be an absolute path: {cwd}"
_CWD_NOT_ACCESSIBLE: Final = "subagent-dsh-sdk: parent session cwd is not an accessible directory: {cwd}"
_START_FAILED_LOG: Final = 'subagent-dsh-sdk "%s": child start failed: %r'
_RUN_FAILED_LOG: Final = 'subagent-dsh-sdk "%s": child run failed (%s): %s'
_CLOSED_MESSAGE: Final = 'subagent provider "{name}" is closed'


def _resolve_parent_cwd(parent_cwd: str | None) -> str:
    """The parent session cwd, validated; raises the raw, host-only ``ConfigError`` of §5.1 step 2."""
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


def spec_of_entry(entry: SdkEntryConfig, cwd: str) -> SdkRunSpec:
    """The run spec of an entry for one resolved cwd (the route is the entry's until ``agent_options`` apply)."""
    return SdkRunSpec(
        command=entry.command,
        args=tuple(entry.args),
        cwd=cwd,
        env=dict(entry.env),
        provider=entry.provider,
        model=entry.model,
        max_tokens=entry.max_tokens,
        shutdown_timeout_ms=entry.shutdown_timeout_ms,
        dispose_eof_grace_ms=entry.dispose_eof_grace_ms,
        dispose_grace_ms=entry.dispose_grace_ms,
        initialize_timeout_ms=entry.initialize_timeout_ms,
    )


class DshSdkProvider(Provider):
    """Runs each request in a fresh DSH SDK runtime (one process per run, no reuse)."""

    def __init__(
        self,
        entry: SdkEntryConfig,
        *,
        task_group: TaskGroup,
        logger: logging.Logger | None = None,
        client_factory: ClientFactory = SdkClient,
    ) -> None:
        """Bind the provider to a validated entry and the host's task group.

        Args:
            entry: the validated config entry (absolute ``cwd`` if configured, expanded ``env``).
            task_group: owns every run's background tasks.
            logger: the host logger; ``host.sdk_provider`` by default.
            client_factory: builds each run's client (a test seam; ``SdkClient`` by default).
        """
        self._entry = entry
        self._task_group = task_group
        self._logger = logger if logger is not None else logging.getLogger(HOST_LOGGER_NAME)
        self._client_factory = client_factory
        self._runs: list[SdkRun] = []
        self._closed = False

    @property
    def name(self) -> str:
        """The entry name."""
        return self._entry.name

    @property
    def kind(self) -> Literal["dsh-sdk"]:
        """Always ``dsh-sdk``."""
        return "dsh-sdk"

    @property
    def capabilities(self) -> Capabilities:
        """DSH SDK runs accept ``agent_options``."""
        return Capabilities(agent_options=True)

    async def start(self, request: SubagentRequest) -> SubagentRun:
        """Start a run; returns once the runtime answered ``initialize``.

        Raises:
            StartAbortedError: the signal was already cancelled (nothing logged or spawned), or fired during startup.
            SdkRunFailure: a safe startup failure (``R(initialize, <category>)``).
            AggregateError: a startup failure or cancellation whose client close failed too.
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
            raise sdk_run_failure("initialize", "configuration", raw) from raw
        run = await start_sdk_run(
            request,
            spec_of_entry(self._entry, cwd),
            task_group=self._task_group,
            on_error=self._log_run_failure,
            client_factory=self._client_factory,
            provider_name=self.name,
        )
        assert isinstance(run, SdkRun)
        self._runs = [live for live in self._runs if not live.disposed]
        self._runs.append(run)
        if self._closed:  # closed while this run was starting: it must not outlive the provider
            await self._dispose_contained(run)
            raise SubagentHostError(_CLOSED_MESSAGE.format(name=self.name))
        return run

    async def aclose(self) -> None:
        """Dispose every live run (shielded; each close is bounded); later ``start`` calls raise. Idempotent."""
        self._closed = True
        runs, self._runs = self._runs, []
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as group:
                for run in runs:
                    group.start_soon(self._dispose_contained, run)

    async def _dispose_contained(self, run: SdkRun) -> None:
        try:
            await run.dispose()
        except SubagentHostError:
            # Already reported through the error sink (the `child run failed` line).
            pass

    def _log_run_failure(self, error: BaseException, stop_reason: Literal["error"]) -> None:
        self._logger.warning(_RUN_FAILED_LOG, self.name, stop_reason, error)
