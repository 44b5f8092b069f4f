"""``DshSdkProvider``: the registered provider entry for one ``kind = "dsh-sdk"`` config entry.

``start`` checks the pre-abort first, resolves the child's cwd (configured, else the parent session's; never the
host's own), builds the run's spec from the entry and starts it through ``start_sdk_run``, wiring the error sink to
the host logger (docs/behaviour.md#sdk-host-only-text). ``aclose`` disposes every live run, shielded and bounded; a
later ``start`` raises.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Final, Literal

from anyio.abc import TaskGroup

from host._exceptions import ConfigError, SubagentHostError
from host.config import SdkEntryConfig
from host.diagnostics import sdk_run_failure
from host.run._contracts import Capabilities, Provider, SubagentRequest
from host.run._entry_provider import EntryProvider
from host.sdk_provider._run import START_ABORTED_MESSAGE, ClientFactory, SdkRun, start_sdk_run
from host.sdk_provider.client import SdkClient, SdkRunSpec
from host.telemetry._config import with_traceparent

__all__ = ["HOST_LOGGER_NAME", "DshSdkProvider", "spec_of_entry"]

HOST_LOGGER_NAME: Final = "host.sdk_provider"
"""The logger that receives the provider's host lines."""


def spec_of_entry(entry: SdkEntryConfig, cwd: str) -> SdkRunSpec:
    """The run spec of an entry for one resolved cwd (the route is the entry's until ``agent_options`` apply)."""
    return SdkRunSpec(
        command=entry.command,
        args=tuple(entry.args),
        cwd=cwd,
        env=dict(entry.env),
        inherit_env=entry.inherit_env,
        provider=entry.provider,
        model=entry.model,
        max_tokens=entry.max_tokens,
        shutdown_timeout_ms=entry.shutdown_timeout_ms,
        dispose_eof_grace_ms=entry.dispose_eof_grace_ms,
        dispose_grace_ms=entry.dispose_grace_ms,
        initialize_timeout_ms=entry.initialize_timeout_ms,
        max_output_bytes=entry.max_output_bytes,
    )


def _configuration_failure(raw: ConfigError) -> SubagentHostError:
    return sdk_run_failure("initialize", "configuration", raw)


class DshSdkProvider(Provider):
    """Runs each request in a fresh DSH SDK runtime (one process per run, no reuse)."""

    def __init__(
        self,
        entry: SdkEntryConfig,
        *,
        task_group: TaskGroup,
        client_factory: ClientFactory = SdkClient,
    ) -> None:
        """Bind the provider to a validated entry and the host's task group.

        Args:
            entry: the validated config entry (absolute ``cwd`` if configured, expanded ``env``).
            task_group: owns every run's background tasks.
            client_factory: builds each run's client (a test seam; ``SdkClient`` by default).
        """
        self._config = entry
        self._task_group = task_group
        self._client_factory = client_factory
        self._entry: EntryProvider[SdkRun] = EntryProvider(
            entry.name,
            configured_cwd=entry.cwd,
            logger=logging.getLogger(HOST_LOGGER_NAME),
            prefix="subagent-dsh-sdk",
            start_aborted_message=START_ABORTED_MESSAGE,
            configuration_failure=_configuration_failure,
            build_run=self._build_run,
        )

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

    async def start(self, request: SubagentRequest) -> SdkRun:
        """Start a run; returns once the runtime answered ``initialize``.

        Raises:
            StartAbortedError: the signal was already cancelled (nothing logged or spawned), or fired during startup.
            SdkRunFailure: a safe startup failure (``R(initialize, <category>)``).
            AggregateError: a startup failure or cancellation whose client close failed too.
            SubagentHostError: the provider was closed.
        """
        return await self._entry.start(request)

    async def aclose(self) -> None:
        """Dispose every live run (shielded; each release is bounded); later ``start`` calls raise. Idempotent."""
        await self._entry.aclose()

    async def _build_run(self, request: SubagentRequest, cwd: str) -> SdkRun:
        spec = spec_of_entry(self._config, cwd)
        if request.traceparent is not None:
            spec = dataclasses.replace(spec, env=with_traceparent(spec.env, request.traceparent))
        return await start_sdk_run(
            request,
            spec,
            task_group=self._task_group,
            on_error=self._entry.log_run_failure,
            client_factory=self._client_factory,
            provider_name=self.name,
        )
