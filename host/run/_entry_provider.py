"""``EntryProvider``: what a registered provider entry does around its kind's own ``build_run``.

It owns the entry's name, the host logger and its two spec lines (``child start failed``, ``child run failed``),
the start prelude (closed provider, pre-abort, the child's cwd: configured, else the parent session's, never the
host's own) and the live runs that ``aclose`` disposes concurrently, shielded, each dispose bounded. A run that
finished starting while the provider closed is disposed and refused.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from typing import Final, Generic, Literal, Protocol, TypeVar, final

import anyio

from host._exceptions import ConfigError, StartAbortedError, SubagentHostError
from host.config import is_accessible_directory
from host.run._contracts import SubagentRequest

__all__ = ["CLOSED_MESSAGE", "EntryProvider"]

CLOSED_MESSAGE: Final = 'subagent provider "{name}" is closed'
"""``SubagentHostError`` text of a ``start`` on a closed provider."""

_NO_CWD: Final = (
    "{prefix}: no working directory for the child — configure `cwd` or delegate from a parent session that has one"
)
_CWD_NOT_ABSOLUTE: Final = "{prefix}: parent session cwd must be an absolute path: {cwd}"
_CWD_NOT_ACCESSIBLE: Final = "{prefix}: parent session cwd is not an accessible directory: {cwd}"


class _LiveRun(Protocol):
    @property
    def disposed(self) -> bool: ...

    async def dispose(self) -> None: ...


RunT = TypeVar("RunT", bound=_LiveRun)


def resolve_child_cwd(configured: str | None, parent_cwd: str | None, prefix: str) -> str:
    """The configured cwd if any, else the validated parent session cwd.

    Raises:
        ConfigError: no cwd at all, or a parent cwd that is relative or not an accessible directory.
    """
    if configured is not None:
        return configured
    if parent_cwd is None:
        raise ConfigError(_NO_CWD.format(prefix=prefix))
    if not os.path.isabs(parent_cwd):
        raise ConfigError(_CWD_NOT_ABSOLUTE.format(prefix=prefix, cwd=parent_cwd))
    if not is_accessible_directory(parent_cwd):
        raise ConfigError(_CWD_NOT_ACCESSIBLE.format(prefix=prefix, cwd=parent_cwd))
    return parent_cwd


async def _dispose_contained(run: _LiveRun) -> None:
    try:
        await run.dispose()
    except SubagentHostError:
        # Already reported through the error sink (the `child run failed` line).
        pass


@final
class EntryProvider(Generic[RunT]):
    """A provider entry's name, host logger, start prelude and live runs, around its kind's ``build_run``."""

    def __init__(
        self,
        name: str,
        *,
        configured_cwd: str | None,
        logger: logging.Logger,
        prefix: str,
        start_aborted_message: str,
        configuration_failure: Callable[[ConfigError], SubagentHostError],
        build_run: Callable[[SubagentRequest, str], Awaitable[RunT]],
    ) -> None:
        """Bind the shared plumbing.

        Args:
            name: the entry name (the provider's name).
            configured_cwd: the entry's ``cwd`` (absolute, validated at load), or ``None`` to inherit the parent's.
            logger: the host logger that receives the provider's host lines.
            prefix: the kind's prefix without the colon (``subagent-acp`` or ``subagent-dsh-sdk``).
            start_aborted_message: the ``StartAbortedError`` text of a pre-aborted request.
            configuration_failure: the safe ``configuration`` failure of a raw cwd ``ConfigError``.
            build_run: starts the kind's run for a request and its resolved cwd.
        """
        self.name: Final = name
        self._configured_cwd = configured_cwd
        self._logger = logger
        self._prefix = prefix
        self._start_failed_log = prefix + ' "%s": child start failed: %r'
        self._run_failed_log = prefix + ' "%s": child run failed (%s): %s'
        self._start_aborted_message = start_aborted_message
        self._configuration_failure = configuration_failure
        self._build_run = build_run
        self._runs: list[RunT] = []
        self._closed = False

    async def start(self, request: SubagentRequest) -> RunT:
        """Refuse a closed provider, then a pre-aborted request; resolve the cwd; build, track and return the run.

        Raises:
            SubagentHostError: the provider was closed (before or while the run started).
            StartAbortedError: the request's signal was already cancelled (nothing logged or spawned).
            AcpRunFailure | SdkRunFailure: the safe ``configuration`` failure, or the run's own startup failure.
        """
        self._check_open()
        if request.signal.cancelled:
            raise StartAbortedError(self._start_aborted_message)
        try:
            cwd = request.cwd or resolve_child_cwd(self._configured_cwd, request.parent_cwd, self._prefix)
        except ConfigError as raw:
            self._logger.warning(self._start_failed_log, self.name, raw)
            raise self._configuration_failure(raw) from raw
        run = await self._build_run(request, cwd)
        self._runs = [live for live in self._runs if not live.disposed]
        self._runs.append(run)
        if self._closed:  # closed while this run was starting: it must not outlive the provider
            await _dispose_contained(run)
            self._check_open()
        return run

    def log_run_failure(self, error: BaseException, stop_reason: Literal["error"]) -> None:
        """The error sink of every run: the ``child run failed`` host line."""
        self._logger.warning(self._run_failed_log, self.name, stop_reason, error)

    async def aclose(self) -> None:
        """Dispose every live run concurrently (shielded; each dispose is bounded); later starts raise. Idempotent."""
        self._closed = True
        runs, self._runs = self._runs, []
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as group:
                for run in runs:
                    group.start_soon(_dispose_contained, run)

    def _check_open(self) -> None:
        if self._closed:
            raise SubagentHostError(CLOSED_MESSAGE.format(name=self.name))
