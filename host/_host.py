"""``Host``: config → one provider per entry → a tool registry with the timeout policy, delegation and job tools.

``Host.open`` owns a task group for the providers' run tasks and the background jobs. Closing the host cancels
every outstanding call and job through its controller, waits for them (shielded, bounded), then closes every
provider, which disposes any run still live; no child outlives the host. Given ``state_dir``, every run (foreground
or background) is recorded under ``<state_dir>/runs/`` (``host.records``).
"""

from __future__ import annotations

import itertools
import logging
import os
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, Protocol

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup

from host._exceptions import SubagentHostError
from host.cancel import CancelController, CancelSignal, fuse
from host.config import EntryConfig, HostConfig, load_config
from host.diagnostics import JobOutcome
from host.process import hold_keeper, release_keeper, term_grace
from host.records import RecordObserver, RunRecording, resolve_state_dir
from host.run._contracts import Provider
from host.run._workspace import WorkspaceProvider, reclaim_worktrees
from host.sessions import SessionTable
from host.telemetry import maybe_traced
from host.tools import (
    JobDoneListener,
    JobRunner,
    ParentCwdOf,
    RunHooks,
    RunSlots,
    ToolExecutionInput,
    ToolRegistry,
    ToolResult,
    ToolRunContext,
    create_changes_apply_tool,
    create_delegation_tool,
    create_job_tools,
    create_session_tools,
    install_timeout_policy,
)
from host.workspace import Workspaces

__all__ = ["CALLS_CLOSE_TIMEOUT_S", "HOST_CLOSED_REASON", "Host"]

logger = logging.getLogger(__name__)
# An embedding application that configures no logging must not get the host's raw causes on its stderr.
logging.getLogger("host").addHandler(logging.NullHandler())

HOST_CLOSED_REASON: Final = "subagent host closed"
"""The cancel reason of calls still outstanding when the host closes."""
CALLS_CLOSE_TIMEOUT_S: Final = 30.0
"""Bounds how long closing waits for cancelled outstanding calls to settle (each run's ladder bounds it normally)."""

_CLOSED_MESSAGE: Final = "subagent host is closed"
_DUPLICATE_CALL_ID: Final = 'call id "{call_id}" is already in use; hooks need a unique call id'


class _ClosableProvider(Provider, Protocol):
    async def aclose(self) -> None:
        """Dispose every live run; later starts raise."""
        ...


def _create_provider(
    entry: EntryConfig, task_group: TaskGroup, recording: RunRecording | None, workspaces: Workspaces
) -> _ClosableProvider:
    # A provider package is imported only once an entry of its kind is configured (the command line's cold start).
    provider: _ClosableProvider
    if entry.kind == "acp":
        from host.acp_provider import AcpProvider

        provider = AcpProvider(entry, task_group=task_group)
    else:
        from host.sdk_provider import DshSdkProvider

        provider = DshSdkProvider(entry, task_group=task_group)
    # Worktree runs are composed inside the recording, so a setup failure and the changes event are recorded too.
    provider = WorkspaceProvider(provider, entry, workspaces)
    recorded = recording.wrap(provider, entry) if recording is not None else provider
    # Opt-in tracing: the provider itself unless OTEL_* or a program configured OpenTelemetry (host.telemetry).
    return maybe_traced(recorded, entry)


class Host:
    """Runs delegated subtasks through a tool registry; open it with ``async with Host.open(...) as host``."""

    def __init__(
        self,
        config: HostConfig,
        task_group: TaskGroup,
        parent_cwd_of: ParentCwdOf,
        *,
        recording: RunRecording | None = None,
        workspaces: Workspaces | None = None,
        max_concurrent_runs: int | None = None,
        state_dir: Path | None = None,
        persist_shared_sessions: bool = True,
    ) -> None:
        """Build the providers and the registry (use ``Host.open``, which also owns the task group and the close)."""
        self._config = config
        self._workspaces = workspaces if workspaces is not None else Workspaces(resolve_state_dir())
        self._recording = recording
        self._closed = False
        self._calls: dict[int, CancelController] = {}
        self._call_keys = itertools.count()
        self._call_numbers = itertools.count(1)
        self._hooks: dict[str, RunHooks] = {}
        self._idle: anyio.Event | None = None
        """Set when the last call ends; made only while the close waits for calls (never on a call's path)."""
        # One limit for every run, foreground or background (docs/behaviour.md#results-run-slots).
        self._slots = RunSlots(max_concurrent_runs or config.max_concurrent_runs)
        self._jobs = JobRunner(
            task_group,
            max_finished_jobs=config.max_finished_jobs,
            max_finished_output_bytes=config.max_finished_job_output_bytes,
            slots=self._slots,
        )
        self._sessions = SessionTable(
            state_dir=state_dir,
            max_warm=config.max_warm_sessions,
            ttl_days=config.session_ttl_days,
            task_group=task_group,
            workspaces=self._workspaces,
            persist_shared=persist_shared_sessions,
        )
        self._providers: dict[str, _ClosableProvider] = {}
        for name, entry in config.providers.items():
            self._providers[name] = _create_provider(entry, task_group, recording, self._workspaces)
        registry = ToolRegistry()
        # First, so its budget is the outermost wrapper and covers everything inside
        # (docs/behaviour.md#registry-timeout-policy).
        install_timeout_policy(registry)
        self._unregister: list[Callable[[], None]] = []
        for name, entry in config.providers.items():
            self._unregister.append(
                registry.register(
                    create_delegation_tool(
                        self._providers[name],
                        entry,
                        parent_cwd_of=parent_cwd_of,
                        jobs=self._live_jobs,
                        hooks_of=self._hooks_of,
                        slots=self._slots,
                        sessions=self._sessions,
                    )
                )
            )
        for definition in create_job_tools(self._live_jobs).values():
            self._unregister.append(registry.register(definition))
        self._unregister.append(registry.register(create_changes_apply_tool(self._workspaces)))
        for definition in create_session_tools(self._sessions).values():
            self._unregister.append(registry.register(definition))
        self._registry = registry

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        config: HostConfig | str | os.PathLike[str] | None = None,
        *,
        parent_cwd: str | ParentCwdOf | None = None,
        state_dir: str | os.PathLike[str] | None = None,
        on_record: RecordObserver | None = None,
        max_concurrent_runs: int | None = None,
        persist_shared_sessions: bool = True,
    ) -> AsyncGenerator[Host]:
        """Open a host over ``config`` (``None``: the ``load_config()`` lookup order); close it on exit.

        Args:
            config: the loaded configuration, a config file path, or ``None`` for the lookup order.
            parent_cwd: the parent session's working directory, or a function of a call's ``agent`` token that
                returns it (``None`` when unknown). Not given: the current directory when the host opens, as the
                command line does.
            state_dir: record every run under ``<state_dir>/runs/`` and every session under ``<state_dir>/sessions/``
                (``None``: nothing is written to disk; sessions live only as long as the host).
            on_record: observes every run record as it is emitted (also without ``state_dir``).
            max_concurrent_runs: how many runs (foreground calls and background jobs together) may be alive at
                once; the rest queue. ``None``: the config's ``[host] max_concurrent_runs`` (default 8).
            persist_shared_sessions: ``False``: a session in the shared workspace is never written under
                ``<state_dir>/sessions/``, so once its child is gone it cannot be continued (a batch's one-shot items;
                a ``worktree`` session's file is still written).

        Raises:
            ConfigError: loading the config (a path, or the lookup order) failed.
            TypeError: ``config`` is none of these.
            ValueError: ``max_concurrent_runs`` is less than 1.
        """
        if config is None or isinstance(config, str | os.PathLike):
            config = load_config(config)
        elif not isinstance(config, HostConfig):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f"Host.open takes a HostConfig, a path or None, not {type(config).__name__}")
        if max_concurrent_runs is not None and (type(max_concurrent_runs) is not int or max_concurrent_runs < 1):
            raise ValueError("max_concurrent_runs must be an integer >= 1")
        if parent_cwd is None:
            parent_cwd = os.getcwd()  # as the command line does: delegate from where the program runs
        parent_cwd_of: ParentCwdOf = parent_cwd if callable(parent_cwd) else _constant(parent_cwd)
        workspaces = Workspaces(resolve_state_dir(state_dir))
        resolved_state_dir = resolve_state_dir(state_dir) if state_dir is not None else None
        recording = (
            RunRecording(
                state_dir=resolved_state_dir,
                keep_runs=config.keep_runs,
                on_record=on_record,
                # Retention also deletes a pruned worktree run's branch, patch and changes file.
                on_pruned=workspaces.delete_branches if state_dir is not None else None,
            )
            if state_dir is not None or on_record is not None
            else None
        )
        # Worktrees left locked by a host that died are salvaged (delta kept as patch + branch) and removed.
        await reclaim_worktrees(workspaces)
        # While a host is open its children are enrolled with the keeper, which ends them if this process dies.
        hold_keeper()
        try:
            async with anyio.create_task_group() as task_group:
                if recording is not None:
                    task_group.start_soon(recording.run_flusher, name="run record flusher")
                host = cls(
                    config,
                    task_group,
                    parent_cwd_of,
                    recording=recording,
                    workspaces=workspaces,
                    max_concurrent_runs=max_concurrent_runs,
                    state_dir=resolved_state_dir,
                    persist_shared_sessions=persist_shared_sessions,
                )
                host._sessions.start()
                try:
                    yield host
                finally:
                    await host._aclose()
                    # Every run and job has settled and been disposed; nothing left in the group may keep it open.
                    task_group.cancel_scope.cancel()
        finally:
            # Closing the keeper ends what the runs left behind (setsid()-ed, double-forked) before returning.
            grace_ms = max((entry.dispose_grace_ms for entry in config.providers.values()), default=0.0)
            await release_keeper(term_grace(grace_ms))

    @property
    def config(self) -> HostConfig:
        """The configuration the host was opened with."""
        return self._config

    @property
    def providers(self) -> Mapping[str, Provider]:
        """The providers, keyed by entry name, in config order."""
        return MappingProxyType(self._providers)

    def tools(self) -> list[dict[str, Any]]:
        """The model-visible tool list: ``{name, description, parameters}`` per tool."""
        return self._registry.schemas()

    async def execute(
        self,
        name: str,
        arguments: object,
        *,
        signal: CancelSignal,
        call_id: str | None = None,
        agent: object | None = None,
        hooks: RunHooks | None = None,
    ) -> ToolResult:
        """Run one tool call to its single result; cancel it through ``signal``.

        Args:
            name: the tool to call.
            arguments: the parsed JSON arguments.
            signal: the caller-owned cancel signal.
            call_id: the call's id (default: a fresh ``call-<n>``).
            agent: the opaque owner token; the delegation tools map it to the parent cwd.
            hooks: per-call observers of a foreground delegation (live frames, the settled result).

        Raises:
            SubagentHostError: the host is closed.
            TypeError: ``signal`` is not a ``CancelSignal`` (raised before anything is registered).
            ValueError: ``hooks`` were given with a ``call_id`` already in use.
        """
        if not isinstance(signal, CancelSignal):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f"execute() needs signal=CancelSignal, not {type(signal).__name__}")
        if self._closed:
            raise SubagentHostError(_CLOSED_MESSAGE)
        if call_id is None:
            call_id = f"call-{next(self._call_numbers)}"
        if hooks is not None:
            if call_id in self._hooks:
                raise ValueError(_DUPLICATE_CALL_ID.format(call_id=call_id))
            self._hooks[call_id] = hooks
        key = next(self._call_keys)
        controller = CancelController()
        self._calls[key] = controller
        fused, dispose = fuse(signal, controller.signal)
        try:
            result = await self._registry.execute(
                ToolExecutionInput(call_id=call_id, name=name, arguments=arguments, signal=fused, agent=agent)
            )
            if result.is_error:
                # A refusal (invalid arguments, an unknown or closed session) is often made without a scheduling
                # point: a caller looping over refused calls must not starve the event loop.
                await anyio.lowlevel.cancel_shielded_checkpoint()
            return result
        finally:
            dispose()
            del self._calls[key]
            if hooks is not None:
                del self._hooks[call_id]
            if not self._calls and self._idle is not None:
                self._idle.set()

    async def wait_job(self, job_id: str) -> JobOutcome:
        """Wait until a background job settled (its run disposed) and return its outcome.

        Raises:
            JobNotFoundError: no job has that id.
        """
        return await self._jobs.wait(job_id)

    def on_job_done(self, listener: JobDoneListener) -> Callable[[], None]:
        """Call ``listener(job_id, notice)`` when a background job settles unreported; return its remover."""
        return self._jobs.on_job_done(listener)

    def cancel_jobs(self) -> None:
        """Kill every live background job now, without waiting (closing the host waits for them)."""
        self._jobs.cancel_all()

    def _live_jobs(self) -> JobRunner | None:
        return None if self._closed else self._jobs

    def _hooks_of(self, ctx: ToolRunContext) -> RunHooks | None:
        return self._hooks.get(ctx.call_id)

    async def _aclose(self) -> None:
        """Cancel calls and jobs through their controllers, wait for them, then close every provider."""
        with anyio.CancelScope(shield=True):
            self._closed = True
            for controller in list(self._calls.values()):
                controller.cancel(HOST_CLOSED_REASON)
            await self._jobs.aclose()
            with anyio.move_on_after(CALLS_CLOSE_TIMEOUT_S) as scope:
                if self._calls:
                    self._idle = anyio.Event()
                    await self._idle.wait()
            if scope.cancelled_caught:
                logger.warning("subagent-host: outstanding calls did not settle within %ss", CALLS_CLOSE_TIMEOUT_S)
            # Every warm session goes cold (its child down, its file kept): a later host resumes it.
            await self._sessions.aclose()
            async with anyio.create_task_group() as group:
                for provider in self._providers.values():
                    group.start_soon(_close_provider, provider)
            if self._recording is not None:
                self._recording.close()
            # A closed host offers nothing: its providers and tools are unregistered (docs/behaviour.md#acp-acceptance).
            self._providers.clear()
            for unregister in self._unregister:
                unregister()


async def _close_provider(provider: _ClosableProvider) -> None:
    try:
        await provider.aclose()
    except Exception:  # containment boundary: one provider's failed close must not skip the others
        logger.exception('subagent-host: closing provider "%s" failed', provider.name)


def _constant(parent_cwd: str | None) -> ParentCwdOf:
    def parent_cwd_of(_agent: object | None) -> str | None:
        return parent_cwd

    return parent_cwd_of
