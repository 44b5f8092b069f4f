"""``BatchSlot``: the worker side of ``RayExecutor``, one Ray async actor per slot running its own ``Host``.

A long ``serve`` call owns the slot's host for the whole batch; each ``run`` call hands it one item and returns the
outcome with the files its runs left in the node's worker state directory (``_run_files``); ``read_chunk`` and
``drop_files`` serve the large ones. Ray's cancel of a ``run`` call (an asyncio cancel) becomes the item's own cancel
signal, and the call waits, shielded and bounded, until the item's ladder is done. Nothing here imports Ray.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from host._host import Host
from host.batch._attempt import ItemOutcome, ItemPlan, RecordedStarts, run_item
from host.batch._results import RESULT_SCHEMA
from host.batch._run_files import RunFile, collect_run_files, read_chunk, remove_run_files, worker_state_dir
from host.cancel import CancelController
from host.config import EntryConfig, HostConfig
from host.workspace import Workspaces

__all__ = ["CANCEL_GRACE_S", "CWD_NOT_ON_NODE", "BatchSlot", "ConfigParts", "SlotOutcome"]

CANCEL_GRACE_S: Final = 30.0
"""After a stop, how long cancelled actor calls get to tear their runs down before the actors are killed."""
CWD_NOT_ON_NODE: Final = "CWD_NOT_ON_NODE"
"""The ``error_code`` of an item whose ``cwd`` is not a directory on the worker's node (a remote cluster)."""


@dataclass(frozen=True, slots=True)
class ConfigParts:
    """A ``HostConfig`` as plain picklable parts (its mapping proxies are not)."""

    providers: dict[str, EntryConfig]
    source: str
    keep_runs: int
    max_finished_jobs: int
    max_finished_job_output_bytes: int

    @classmethod
    def of(cls, config: HostConfig) -> ConfigParts:
        return cls(
            dict(config.providers),
            config.source,
            config.keep_runs,
            config.max_finished_jobs,
            config.max_finished_job_output_bytes,
        )

    def config(self) -> HostConfig:
        return HostConfig(
            providers=MappingProxyType(self.providers),
            source=self.source,
            keep_runs=self.keep_runs,
            max_finished_jobs=self.max_finished_jobs,
            max_finished_job_output_bytes=self.max_finished_job_output_bytes,
        )


@dataclass(slots=True)
class _Request:
    """One item handed from an actor call (``run``) to the slot's host (``serve``)."""

    plan: ItemPlan
    stop: CancelController = field(default_factory=CancelController)
    done: anyio.Event = field(default_factory=anyio.Event)
    run_ids: list[str] = field(default_factory=list[str])
    outcome: ItemOutcome | None = None


@dataclass(frozen=True, slots=True)
class SlotOutcome:
    """What a ``run`` call returns: the item's outcome and the files its runs left on the node."""

    outcome: ItemOutcome
    files: tuple[RunFile, ...] = ()


class BatchSlot:
    """One worker slot (a Ray async actor): ``serve`` owns the slot's ``Host`` for the whole batch, each ``run``
    call hands it one item and returns the outcome with the files of its runs (``read_chunk`` and ``drop_files``
    serve the large ones)."""

    def __init__(self, parts: ConfigParts) -> None:
        self._config = parts.config()
        self._state_dir = worker_state_dir()
        self._runs_dir = self._state_dir / "runs"
        self._requests: MemoryObjectSendStream[_Request] | None = None
        self._ready: anyio.Event | None = None
        self._current: _Request | None = None
        """The item running now (the driver hands a slot one at a time): its runs are the ones the host records."""
        self._starts = RecordedStarts()

    async def ready(self) -> bool:
        """Answers once the actor is up (the driver calls it before ``serve``; the loop is the actor's own)."""
        if self._ready is None:
            self._ready = anyio.Event()
        return True

    async def serve(self) -> None:
        """Open the slot's host and run every item handed to it, until Ray cancels this call."""
        assert self._ready is not None, "ready() first"
        send, receive = anyio.create_memory_object_stream[_Request](1)
        try:
            async with (
                Host.open(
                    self._config,
                    parent_cwd=_cwd_of,
                    state_dir=self._state_dir,
                    on_record=self._on_record,
                    persist_shared_sessions=False,  # as the local executor: an item's session needs no file
                ) as host,
                anyio.create_task_group() as group,
                receive,
            ):
                workspaces = Workspaces(self._state_dir)  # the host's own worktree store (same state directory)
                self._requests = send
                self._ready.set()
                async for request in receive:
                    group.start_soon(self._run, host, workspaces, request)
        finally:
            self._requests = None
            self._ready.set()  # a host that failed to open fails every run instead of hanging it

    async def run(self, plan: ItemPlan) -> SlotOutcome:
        """Run ``plan`` on the slot's host; Ray's cancel of this call stops the item (its full ladder) first."""
        assert self._ready is not None, "ready() first"
        await self._ready.wait()
        if not await anyio.Path(plan.cwd).is_dir():
            return SlotOutcome(_not_on_node(plan))
        if self._requests is None:
            raise RuntimeError("the slot's host is not open")
        request = self._current = _Request(plan)
        self._requests.send_nowait(request)
        try:
            await request.done.wait()
        except anyio.get_cancelled_exc_class():
            request.stop.cancel("the Ray call was cancelled")
            with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_GRACE_S):
                await request.done.wait()
            raise
        assert request.outcome is not None
        files = await anyio.to_thread.run_sync(collect_run_files, self._runs_dir, request.run_ids)
        return SlotOutcome(request.outcome, files)

    async def read_chunk(self, name: str, offset: int) -> bytes:
        """The next piece of a large run file the last ``run`` returned (empty at its end)."""
        return await anyio.to_thread.run_sync(read_chunk, self._runs_dir, name, offset)

    async def drop_files(self, names: list[str]) -> None:
        """Remove large run files from the node once the driver has them."""
        await anyio.to_thread.run_sync(remove_run_files, self._runs_dir, names)

    def _on_record(self, run_id: str, record: dict[str, Any]) -> None:
        """Every run of the current item, a start that failed before its first frame included."""
        self._starts.observe(run_id, record)
        current = self._current
        if record.get("type") == "run/start" and current is not None and run_id not in current.run_ids:
            current.run_ids.append(run_id)

    async def _run(self, host: Host, workspaces: Workspaces, request: _Request) -> None:
        try:
            request.outcome = await run_item(
                host,
                request.plan,
                request.stop.signal,
                discard_changes=workspaces.delete_branches,
                starts=self._starts,
            )
        finally:
            request.done.set()


def _not_on_node(plan: ItemPlan) -> ItemOutcome:
    """The result of an item whose ``cwd`` is not a directory on the worker's node: nothing ran."""
    line: dict[str, Any] = {"schema": RESULT_SCHEMA, "id": plan.item.id, "run_id": None, "provider": plan.provider}
    line.update(stop_reason="error", output=[], error_code=CWD_NOT_ON_NODE, duration_ms=0, attempts=1)
    return ItemOutcome(plan.item.id, line)


def _cwd_of(agent: object | None) -> str | None:
    return agent if isinstance(agent, str) else None
