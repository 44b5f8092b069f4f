"""``RayExecutor``: the items run on a Ray cluster, one item at a time in each of ``workers`` async actors.

Each actor runs its own ``Host`` on the node (a long ``serve`` call owns it; each ``run`` call hands it one item), so
the teardown ladder and the keeper run there and nothing an item started survives it (the keeper ends a finished
run's ``setsid()``-ed leftovers, which Ray's own process-group cleanup misses, and its final sweep what is left when
the host closes; the actor is ``BatchSlot``, in ``_ray_slot``). That host records into the node's worker state
directory, so a run leaves there what it leaves in ``OUTDIR/runs/`` locally (a worktree is made from the repository
at the item's ``cwd`` on the node; its branch lives there); the driver copies those files into ``OUTDIR/runs/``
(``_run_files``). An item whose ``cwd`` the node cannot see ends with ``error_code`` ``CWD_NOT_ON_NODE``. Ray's
retries are off (``max_restarts=0``, ``max_task_retries=0``): retries are the batch's own. Stopping cancels the
actor calls (an async actor's call is an asyncio task, so the cancel reaches the host's scopes and its shielded
ladder), waits ``cancel_grace_s`` for them, then kills the actors. Ray is imported only when a batch runs here
(the ``[ray]`` extra).
"""

from __future__ import annotations

import functools
import importlib
import logging
import time
from collections import deque
from collections.abc import Mapping
from typing import Any, Final

import anyio

from host._exceptions import BatchInputError
from host.batch._attempt import ItemOutcome, ItemPlan
from host.batch._executor import BatchJob, Executor
from host.batch._local import DEFAULT_WORKERS
from host.batch._ray_slot import CANCEL_GRACE_S, CWD_NOT_ON_NODE, BatchSlot, ConfigParts, SlotOutcome
from host.batch._run_files import store_run_files

__all__ = ["CANCEL_GRACE_S", "CWD_NOT_ON_NODE", "RAY_MISSING", "RayExecutor"]

logger = logging.getLogger(__name__)

RAY_MISSING: Final = "--executor ray needs Ray: pip install 'subagent-host[ray]'"
_HOST_CLOSE_TIMEOUT_S: Final = 30.0
"""Bounds how long the end of a batch waits for the slots' hosts to close before the actors are killed."""
_POLL_S: Final = 0.25
"""How often the driver looks at the stop signal while it waits for results."""
_FETCH_TIMEOUT_S: Final = 120.0
"""Bounds each call that streams a chunk of a large run file from a worker (or removes it there)."""


class RayExecutor(Executor):
    """Runs items on a Ray cluster: ``address`` (else ``$RAY_ADDRESS``, else a new local cluster).

    Args:
        workers: how many actors, each running one item at a time.
        address: the cluster to connect to (``None``: Ray's own lookup, then a local cluster).
        runtime_env: Ray's ``runtime_env`` for the actors (e.g. ``{"pip": ["subagent-host"]}``).
        cancel_grace_s: how long cancelled calls get before the actors are killed.

    Raises:
        ValueError: ``workers`` is below 1.
    """

    def __init__(
        self,
        workers: int = DEFAULT_WORKERS,
        *,
        address: str | None = None,
        runtime_env: Mapping[str, Any] | None = None,
        cancel_grace_s: float = CANCEL_GRACE_S,
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self._workers = workers
        self._address = address
        self._runtime_env = dict(runtime_env) if runtime_env is not None else None
        self._cancel_grace_s = cancel_grace_s

    @property
    def workers(self) -> int:
        """How many items run at once."""
        return self._workers

    async def execute(self, job: BatchJob) -> None:
        """Run every item of ``job`` on the cluster (see ``Executor``).

        Raises:
            BatchInputError: Ray is not installed.
        """
        try:
            ray: Any = importlib.import_module("ray")
        except ImportError:
            raise BatchInputError(RAY_MISSING) from None
        if not job.plans:
            return
        started_here = not ray.is_initialized()
        if started_here:
            # ray.init installs no signal handler off the main thread, and takes 12-17 s on a small machine:
            # the event loop (signals, the progress display) keeps running meanwhile.
            init = functools.partial(
                ray.init,
                address=self._address,
                runtime_env=self._runtime_env,
                include_dashboard=False,
                log_to_driver=False,
                logging_level=logging.WARNING,
            )
            await anyio.to_thread.run_sync(init, abandon_on_cancel=True)
        try:
            if not job.stop.cancelled:  # stopped while the cluster started: nothing to run
                await _Dispatch(ray, job, self._workers, self._cancel_grace_s).run()
        finally:
            if started_here:
                await anyio.to_thread.run_sync(ray.shutdown)


class _Dispatch:
    """The driver side of one batch on Ray: feeds idle actors, collects results, stops and kills."""

    def __init__(self, ray: Any, job: BatchJob, workers: int, cancel_grace_s: float) -> None:
        self._ray = ray
        self._job = job
        self._slot = ray.remote(num_cpus=0, max_restarts=0, max_task_retries=0, max_concurrency=2)(BatchSlot)
        self._parts = ray.put(ConfigParts.of(job.config))
        self._count = min(workers, len(job.plans))
        self._cancel_grace_s = cancel_grace_s
        self._actors: list[Any] = []
        self._serving: list[Any] = []
        """The ``serve`` call of every actor: cancelled at the end, so each slot's host closes on its node."""
        self._inflight: dict[Any, tuple[Any, ItemPlan]] = {}

    def _new_actor(self) -> Any:
        actor = self._slot.options(scheduling_strategy="SPREAD").remote(self._parts)
        self._actors.append(actor)
        return actor

    def _replacement(self) -> Any:
        actor = self._new_actor()
        self._ray.get(actor.ready.remote())
        self._serving.append(actor.serve.remote())
        return actor

    async def run(self) -> None:
        ray, job = self._ray, self._job
        pending = deque(job.plans)
        try:
            idle = [self._new_actor() for _ in range(self._count)]
            await anyio.to_thread.run_sync(ray.get, [actor.ready.remote() for actor in idle], abandon_on_cancel=True)
            for actor in idle:
                self._serving.append(actor.serve.remote())
            cancelled_at: float | None = None
            while self._inflight or (pending and not job.stop.cancelled):
                while idle and pending and not job.stop.cancelled:
                    actor, plan = idle.pop(), pending.popleft()
                    job.on_start(plan.item.id)
                    self._inflight[actor.run.remote(plan)] = (actor, plan)
                if job.stop.cancelled and cancelled_at is None:
                    cancelled_at = time.monotonic()
                    for ref in self._inflight:
                        ray.cancel(ref)  # an async actor's call: its asyncio task is cancelled
                if cancelled_at is not None and time.monotonic() - cancelled_at > self._cancel_grace_s:
                    logger.warning("subagent-host: %d Ray calls outlived the cancel grace", len(self._inflight))
                    break
                if not self._inflight:
                    continue
                ready = await anyio.to_thread.run_sync(self._wait_ready)
                for ref in ready:
                    actor, plan = self._inflight.pop(ref)
                    returned = await anyio.to_thread.run_sync(self._get, ref, plan)
                    if returned is None:
                        outcome = ItemOutcome(plan.item.id, None)
                        actor = None if job.stop.cancelled else await anyio.to_thread.run_sync(self._replacement)
                    else:
                        outcome = returned.outcome
                        with anyio.CancelScope(shield=True):  # the files of a finished item are written whole
                            await anyio.to_thread.run_sync(self._store, actor, returned)
                    if actor is not None:
                        idle.append(actor)
                    await job.deliver(outcome)
        finally:
            with anyio.CancelScope(shield=True):
                for _actor, plan in self._inflight.values():
                    await job.deliver(ItemOutcome(plan.item.id, None))
                self._inflight.clear()
                await anyio.to_thread.run_sync(self._close_hosts)
                for actor in self._actors:
                    ray.kill(actor, no_restart=True)

    def _close_hosts(self) -> None:
        """Cancel every ``serve`` call (each slot's host closes: its keeper's final sweep runs on the node) and wait
        for them, bounded, before the actors are killed."""
        for ref in self._serving:
            self._ray.cancel(ref)
        self._ray.wait(self._serving, num_returns=len(self._serving), timeout=_HOST_CLOSE_TIMEOUT_S)

    def _wait_ready(self) -> list[Any]:
        refs = list(self._inflight)
        ready, _ = self._ray.wait(refs, num_returns=1, timeout=_POLL_S)
        if ready and len(refs) > 1:
            ready, _ = self._ray.wait(refs, num_returns=len(refs), timeout=0)
        return ready

    def _store(self, actor: Any, returned: SlotOutcome) -> None:
        """Write the files an item's runs left on the node into ``OUTDIR/runs/`` (large ones streamed), then have
        the large ones removed there. A failure is logged: the item's result line is still written."""
        ray = self._ray
        streamed = [run_file.name for run_file in returned.files if run_file.data is None]

        def fetch(name: str, offset: int) -> bytes:
            chunk = ray.get(actor.read_chunk.remote(name, offset), timeout=_FETCH_TIMEOUT_S)
            assert isinstance(chunk, bytes)
            return chunk

        try:
            store_run_files(self._job.state_dir / "runs", returned.files, fetch)
            if streamed:
                ray.get(actor.drop_files.remote(streamed), timeout=_FETCH_TIMEOUT_S)
        except (OSError, ValueError, ray.exceptions.RayError):
            item_id = returned.outcome.item_id
            logger.warning('subagent-host: copying the run files of item "%s" failed', item_id, exc_info=True)

    def _get(self, ref: Any, plan: ItemPlan) -> SlotOutcome | None:
        """The call's outcome; ``None`` when it was cancelled or its actor died (no result: a resume runs it)."""
        ray = self._ray
        try:
            outcome = ray.get(ref)
        except (ray.exceptions.TaskCancelledError, ray.exceptions.RayActorError):
            return None
        except ray.exceptions.RayTaskError:
            logger.exception('subagent-host: the Ray call of item "%s" failed', plan.item.id)
            return None
        assert isinstance(outcome, SlotOutcome)
        return outcome
