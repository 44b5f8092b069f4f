"""The ``Executor`` protocol: how a batch's items run (``LocalExecutor`` here, ``RayExecutor`` on a cluster).

The driver hands an executor a ``BatchJob``; the executor runs the items with its own concurrency, calls
``on_start`` as each item starts and awaits ``deliver`` with each ``ItemOutcome`` (so a slow consumer slows it
down), stops starting items once ``stop`` fires, lets the items already running see ``stop`` (their runs are torn
down through the full ladder) and returns once every item it started has an outcome. Every run's files (transcript,
stderr tail, a worktree run's patch and changes file) must be in ``state_dir/runs/`` before its outcome is
delivered: a host here records there; a remote worker's files are copied there (``RayExecutor``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from host.batch._attempt import ItemOutcome, ItemPlan
from host.cancel import CancelSignal
from host.config import HostConfig

__all__ = ["BatchJob", "Executor"]


@dataclass(frozen=True, slots=True)
class BatchJob:
    """What an executor runs: the items, the config they run under and where their records go."""

    config: HostConfig
    """The host config (retention off, entry timeouts moved into the plans)."""
    state_dir: Path
    """The batch's state directory: run records go to ``state_dir/runs/``."""
    plans: Sequence[ItemPlan]
    """The items to run, in order."""
    stop: CancelSignal
    """Fires when the batch is stopped: start nothing more, and the running items are cancelled by it."""
    on_start: Callable[[str], None]
    """Called with an item's id as it starts (synchronous, must not block)."""
    deliver: Callable[[ItemOutcome], Awaitable[None]]
    """Awaited with every outcome, interrupted ones included."""


@runtime_checkable
class Executor(Protocol):
    """Runs a batch's items somewhere."""

    @property
    def workers(self) -> int:
        """How many items run at once."""
        ...

    async def execute(self, job: BatchJob) -> None:
        """Run ``job``'s items as described in the module docstring."""
        ...
