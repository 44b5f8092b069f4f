"""``LocalExecutor``: the items run in this process, ``workers`` at a time, through one ``Host``.

One host serves the whole batch (one keeper, one recording under the batch's state directory); each of the
``workers`` tasks takes the next item from a shared iterator, so items start in input order. Closing the host at
the end tears down whatever is left, the ``setsid()``-ed leftovers included (the keeper's final sweep).
"""

from __future__ import annotations

from typing import Final

import anyio

from host._host import Host
from host.batch._attempt import RecordedStarts, run_item
from host.batch._executor import BatchJob, Executor
from host.workspace import Workspaces

__all__ = ["DEFAULT_WORKERS", "LocalExecutor"]

DEFAULT_WORKERS: Final = 4
"""How many items run at once unless ``--workers`` says otherwise."""


class LocalExecutor(Executor):
    """Runs items in this process, ``workers`` at a time.

    Raises:
        ValueError: ``workers`` is below 1.
    """

    def __init__(self, workers: int = DEFAULT_WORKERS) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self._workers = workers

    @property
    def workers(self) -> int:
        """How many items run at once."""
        return self._workers

    async def execute(self, job: BatchJob) -> None:
        """Run every item of ``job`` (see ``Executor``)."""
        if not job.plans:
            return
        plans = iter(job.plans)
        workspaces = Workspaces(job.state_dir)  # the host's own worktree store (same state directory)
        starts = RecordedStarts()  # names the run of a start that failed

        async def work(host: Host) -> None:
            for plan in plans:  # one iterator shared by every worker: each item is taken once, in order
                if job.stop.cancelled:
                    return
                job.on_start(plan.item.id)
                outcome = await run_item(
                    host, plan, job.stop, discard_changes=workspaces.delete_branches, starts=starts
                )
                await job.deliver(outcome)

        async with (
            # The workers are the batch's own concurrency: the host's run limit never holds them below it.
            Host.open(
                job.config,
                parent_cwd=_cwd_of,
                state_dir=job.state_dir,
                max_concurrent_runs=max(job.config.max_concurrent_runs, self._workers),
                on_record=starts.observe,
                # An item is one-shot: its session (shared workspace) needs no file, which costs a file creation.
                persist_shared_sessions=False,
            ) as host,
            anyio.create_task_group() as group,
        ):
            for number in range(min(self._workers, len(job.plans))):
                group.start_soon(work, host, name=f"batch worker {number}")


def _cwd_of(agent: object | None) -> str | None:
    """Each call's ``agent`` token is its item's workspace (``ItemPlan.cwd``)."""
    return agent if isinstance(agent, str) else None
