"""``EntryProvider``: the plumbing both registered provider entries share around their own ``start``.

It owns the entry's name, the host logger and its two spec lines (``child start failed``, ``child run failed``),
the start prelude (closed provider, pre-abort, cwd resolution) and the live runs that ``aclose`` disposes,
shielded and bounded. The protocol-specific spec, run entry and safe failure stay with each provider.
"""

from __future__ import annotations

import logging
from typing import Literal

from anyio.abc import TaskGroup

from host._exceptions import ConfigError, StartAbortedError
from host._provider_support._child_run import ChildRun
from host._provider_support._cwd import resolve_child_cwd
from host._provider_support._live_runs import LiveRuns
from host._run import SubagentRequest

__all__ = ["EntryProvider"]


class EntryProvider:
    """A provider entry's name, host logger, start prelude and live runs."""

    def __init__(
        self,
        name: str,
        *,
        task_group: TaskGroup,
        logger: logging.Logger,
        prefix: str,
        start_aborted_message: str,
    ) -> None:
        """Bind the shared plumbing.

        Args:
            name: the entry name (the provider's name).
            task_group: owns every run's background tasks (the host's group).
            logger: the host logger that receives the provider's host lines.
            prefix: the kind's prefix without the colon (``subagent-acp`` or ``subagent-dsh-sdk``).
            start_aborted_message: the ``StartAbortedError`` text of a pre-aborted request.
        """
        self._name = name
        self._task_group = task_group
        self._logger = logger
        self._prefix = prefix
        self._start_failed_log = prefix + ' "%s": child start failed: %r'
        self._run_failed_log = prefix + ' "%s": child run failed (%s): %s'
        self._start_aborted_message = start_aborted_message
        self._live = LiveRuns(name)

    @property
    def name(self) -> str:
        """The entry name."""
        return self._name

    async def aclose(self) -> None:
        """Dispose every live run (shielded; each release is bounded); later ``start`` calls raise. Idempotent."""
        await self._live.aclose()

    def _check_startable(self, request: SubagentRequest) -> None:
        """Refuse a start on a closed provider, then a pre-aborted request (nothing logged or spawned).

        Raises:
            SubagentHostError: the provider was closed.
            StartAbortedError: the request's signal was already cancelled.
        """
        self._live.check_open()
        if request.signal.cancelled:
            raise StartAbortedError(self._start_aborted_message)

    def _child_cwd(self, configured: str | None, request: SubagentRequest) -> str:
        """The child's cwd (``resolve_child_cwd``); a failure is logged as ``child start failed`` and re-raised.

        Raises:
            ConfigError: the raw, host-only cwd failure; the caller maps it to its safe ``configuration`` failure.
        """
        try:
            return resolve_child_cwd(configured, request.parent_cwd, self._prefix)
        except ConfigError as raw:
            self._logger.warning(self._start_failed_log, self._name, raw)
            raise

    async def _adopt(self, run: ChildRun) -> None:
        """Track a published run; one that started while the provider closed is disposed and refused."""
        await self._live.adopt(run)

    def _log_run_failure(self, error: BaseException, stop_reason: Literal["error"]) -> None:
        """The error sink of every run: the ``child run failed`` host line."""
        self._logger.warning(self._run_failed_log, self._name, stop_reason, error)
