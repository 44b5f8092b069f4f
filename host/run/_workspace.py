"""One-shot runs in a git worktree: ``WorkspaceProvider`` composes ``host.workspace`` around a provider.

A run whose request (or entry) says ``workspace = "worktree"`` gets a worktree owned by its run id: acquired before
the child starts (startup errors raise, nothing left behind), the entry's ``setup`` run in it (a failure settles the
run ``error`` with stage ``workspace``, category ``setup-failed``, and no child is started), the child started with
the worktree as its cwd. After the turn (the first ``result()``) the delta is recorded: a ``changes`` transcript
event after ``run/end`` and one host-built line at the end of the output. ``dispose`` removes the worktree; the
branch stays when there were changes.

A session's turn (its request carries a ``WorktreeLease``) works in the session's one worktree instead, owned by the
session id: the one this host holds, else the one the session file describes, recreated from its branch
(``Workspaces.reopen``), else a new one (the session's first turn; a fork's from the source session's branch,
``Workspaces.fork``), which the session then holds (``hold_worktree``). The delta is recorded after every turn as
for a one-shot run; ``dispose`` keeps the worktree (the session removes it when it is closed).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Final, Protocol

import anyio

from host._exceptions import ConfigError, StartAbortedError, WorkspaceError
from host.config import EntryConfig
from host.diagnostics import AcpFailureFacts, SubagentResult, acp_diagnostic, sdk_failure_line
from host.process import ProcessOutcome, build_child_env
from host.run._child_facts import child_facts_of
from host.run._contracts import Capabilities, Provider, SubagentRequest, SubagentRun
from host.run._entry_provider import resolve_child_cwd
from host.run._lease import WorktreeLease
from host.run._lifecycle import new_run_id
from host.stream import EventFrame, FrameObserver, ProviderKind, RunJournal, TranscriptEvent
from host.workspace import Changes, Workspace, Workspaces, changes_line

__all__ = ["AFTER_TURN_TIMEOUT_S", "RECLAIM_TIMEOUT_S", "WorkspaceProvider", "reclaim_worktrees"]

logger = logging.getLogger(__name__)

AFTER_TURN_TIMEOUT_S: Final = 600.0
"""Bounds recording one turn's delta (add, commit, patch, counts) when the awaiting task is cancelled."""
RECLAIM_TIMEOUT_S: Final = 120.0
"""Bounds the reclaim of dead hosts' worktrees when a host opens."""
_ABORTED: Final[dict[str, str]] = {
    "acp": "subagent request was aborted before the ACP child started",
    "dsh-sdk": "subagent request was aborted before the SDK child started",
}
_PREFIXES: Final[dict[str, str]] = {"acp": "subagent-acp", "dsh-sdk": "subagent-dsh-sdk"}


async def reclaim_worktrees(workspaces: Workspaces) -> None:
    """Reclaim the worktrees of dead hosts, bounded; a failure is logged and never stops the host from opening."""
    with anyio.move_on_after(RECLAIM_TIMEOUT_S):
        try:
            reclaimed = await workspaces.reclaim()
        except (WorkspaceError, OSError):
            logger.warning("subagent-host: reclaiming worktrees failed", exc_info=True)
            return
        for owner in reclaimed:
            logger.warning("subagent-host: reclaimed the worktree of %s (its changes are kept, never applied)", owner)


class _ClosableProvider(Provider, Protocol):
    async def aclose(self) -> None: ...


def _setup_failed_diagnostic(kind: ProviderKind) -> str:
    if kind == "acp":
        return acp_diagnostic(AcpFailureFacts(stage="workspace", category="setup-failed"), None) or ""
    return sdk_failure_line("workspace", "setup-failed")


class WorkspaceProvider:
    """A provider whose ``worktree`` runs work in a git worktree of their own (composition; the rest forwards)."""

    def __init__(self, inner: _ClosableProvider, entry: EntryConfig, workspaces: Workspaces) -> None:
        self._inner = inner
        self._entry = entry
        self._workspaces = workspaces

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def kind(self) -> ProviderKind:
        return self._inner.kind

    @property
    def capabilities(self) -> Capabilities:
        return self._inner.capabilities

    async def start(self, request: SubagentRequest) -> SubagentRun:
        """Start the run, in a worktree when the request or the entry asks for one.

        Raises:
            WorkspaceError: the worktree could not be made (no repository, bare, mid-merge/rebase, baseline too
                large, git missing or too old); nothing was started or left behind.
        """
        entry = self._entry
        if (request.workspace or entry.workspace) != "worktree" or request.signal.cancelled:
            return await self._inner.start(request)
        try:
            cwd = resolve_child_cwd(entry.cwd, request.parent_cwd, _PREFIXES[entry.kind])
        except ConfigError:
            return await self._inner.start(request)  # raises the kind's own configuration failure
        run_id = request.run_id or new_run_id()
        if isinstance(request.lease, WorktreeLease):
            return await self._start_session_turn(dataclasses.replace(request, run_id=run_id), request.lease, cwd)
        box: list[Workspace] = []
        setup_ok = True
        try:
            # The caller's cancel stops the preparation (git and setup are killed; nothing is left behind).
            with anyio.CancelScope() as scope:
                remove = request.signal.add_listener(lambda _signal: scope.cancel())
                try:
                    box.append(await self._workspaces.acquire(cwd, run_id, max_baseline_bytes=entry.max_baseline_bytes))
                    setup_ok = await self._run_setup(box[0])
                finally:
                    remove()
            if scope.cancel_called:
                raise StartAbortedError(_ABORTED[entry.kind])
            workspace = box[0]
            if not setup_ok:
                await self._workspaces.release(workspace, keep_branch=False)
                return _SetupFailedRun(run_id, entry, request.on_frame, workspace.setup_output)
            run = await self._inner.start(dataclasses.replace(request, run_id=run_id, cwd=workspace.cwd))
        except BaseException:
            if box:
                await self._workspaces.release(box[0], keep_branch=False)
            raise
        return _WorktreeRun(run, workspace, self._workspaces, request.on_frame)

    async def _start_session_turn(self, request: SubagentRequest, lease: WorktreeLease, cwd: str) -> SubagentRun:
        """A turn in the session's worktree (made or recreated first when this host holds none)."""
        entry = self._entry
        assert request.run_id is not None
        workspace = await lease.worktree()
        saved = lease.saved_worktree
        made: list[Workspace] = []
        if workspace is None:
            setup_ok = True
            try:
                with anyio.CancelScope() as scope:
                    remove = request.signal.add_listener(lambda _signal: scope.cancel())
                    try:
                        if saved is None:
                            made.append(await self._first_worktree(lease, cwd))
                        else:
                            made.append(await self._workspaces.reopen(saved))
                        setup_ok = await self._run_setup(made[0])
                    finally:
                        remove()
                if scope.cancel_called:
                    raise StartAbortedError(_ABORTED[entry.kind])
                if not setup_ok:
                    await self._workspaces.release(made[0], keep_branch=saved is not None)
                    return _SetupFailedRun(request.run_id, entry, request.on_frame, made[0].setup_output)
            except BaseException:
                if made:  # a recreated worktree's branch is the session's work: it stays
                    await self._workspaces.release(made[0], keep_branch=saved is not None)
                raise
            workspace = made[0]
        try:
            run = await self._inner.start(dataclasses.replace(request, cwd=workspace.cwd))
        except BaseException:
            if made:
                await self._workspaces.release(workspace, keep_branch=saved is not None)
            raise
        if made:
            await lease.hold_worktree(workspace)  # the session owns it now: removed when it goes cold or is closed
        return _WorktreeRun(run, workspace, self._workspaces, request.on_frame, owns_worktree=False)

    async def _first_worktree(self, lease: WorktreeLease, cwd: str) -> Workspace:
        """A session's first worktree: a fork's from the source session's work, any other from the parent's tree."""
        owner, source, max_bytes = lease.session_id, lease.fork_source_worktree, self._entry.max_baseline_bytes
        if source is None:
            return await self._workspaces.acquire(cwd, owner, max_baseline_bytes=max_bytes)
        return await self._workspaces.fork(source, cwd, owner, max_baseline_bytes=max_bytes)

    async def _run_setup(self, workspace: Workspace) -> bool:
        entry = self._entry
        if entry.setup is None:
            return True
        env = build_child_env(entry.env, inherit=entry.inherit_env)
        outcome = await self._workspaces.setup(workspace, entry.setup, env=env, timeout_ms=entry.setup_timeout_ms)
        return outcome.ok

    async def aclose(self) -> None:
        await self._inner.aclose()


class _WorktreeRun:
    """A run in a worktree: its first ``result()`` records the turn's delta; ``dispose`` removes the worktree
    unless a session owns it."""

    def __init__(
        self,
        inner: SubagentRun,
        workspace: Workspace,
        workspaces: Workspaces,
        on_frame: FrameObserver | None,
        *,
        owns_worktree: bool = True,
    ) -> None:
        self._inner = inner
        self._owns_worktree = owns_worktree
        self._workspace = workspace
        self._workspaces = workspaces
        self._on_frame = on_frame
        self._lock = anyio.Lock()
        self._result: SubagentResult | None = None
        self._changes: Changes | None = None
        self._released = False

    @property
    def id(self) -> str:
        return self._inner.id

    @property
    def transcript(self) -> tuple[TranscriptEvent, ...]:
        return self._inner.transcript

    @property
    def changes(self) -> Changes | None:
        """The changes of the turn, once recorded."""
        return self._changes

    def child_outcome(self) -> ProcessOutcome | None:
        facts = child_facts_of(self._inner)
        return facts.child_outcome() if facts is not None else None

    def child_stderr(self) -> bytes:
        facts = child_facts_of(self._inner)
        stderr = facts.child_stderr() if facts is not None else b""
        return self._workspace.setup_output + stderr

    async def result(self) -> SubagentResult:
        async with self._lock:
            if self._result is None:
                result = await self._inner.result()
                self._result = await self._record_turn(result)
        return self._result

    async def _record_turn(self, result: SubagentResult) -> SubagentResult:
        changes: Changes | None = None
        with anyio.move_on_after(AFTER_TURN_TIMEOUT_S, shield=True):
            try:
                changes = await self._workspaces.after_turn(self._workspace, self.id)
            except WorkspaceError:
                logger.warning("subagent-host: recording the changes of run %s failed", self.id, exc_info=True)
        if changes is None:
            return result
        self._changes = changes
        if self._on_frame is not None:
            data = changes.model_dump(mode="json")
            event = TranscriptEvent(seq=len(self._inner.transcript), type="changes", data=data)
            try:
                self._on_frame(EventFrame(run_id=self.id, event=event))
            except Exception:  # containment boundary: a frame observer never changes the run
                logger.exception("subagent-host: stream observer failed for run %s", self.id)
        text = changes_line(changes)
        separator = "\n" if result.output else ""
        return result.model_copy(update={"output": [*result.output, {"type": "text", "text": separator + text}]})

    async def dispose(self) -> None:
        try:
            await self._inner.dispose()
        finally:
            if not self._released:
                self._released = True
                with anyio.CancelScope(shield=True):
                    if self._result is None:
                        await self.result()
                    if self._owns_worktree:  # a session's turn leaves it to the session
                        await self._workspaces.release(self._workspace)


class _SetupFailedRun:
    """The settled run of a worktree whose ``setup`` failed: no child, an ``error`` with a closed diagnostic."""

    def __init__(self, run_id: str, entry: EntryConfig, on_frame: FrameObserver | None, setup_output: bytes) -> None:
        self._id = run_id
        self._setup_output = setup_output
        self._result = SubagentResult(stop_reason="error", diagnostic=_setup_failed_diagnostic(entry.kind))
        self._journal = RunJournal(run_id, entry.name, entry.kind, on_frame)
        self._journal.publish()
        self._journal.finish(self._result)

    @property
    def id(self) -> str:
        return self._id

    @property
    def transcript(self) -> tuple[TranscriptEvent, ...]:
        return self._journal.transcript

    def child_outcome(self) -> ProcessOutcome | None:
        return None

    def child_stderr(self) -> bytes:
        return self._setup_output

    async def result(self) -> SubagentResult:
        return self._result

    async def dispose(self) -> None:
        return None
