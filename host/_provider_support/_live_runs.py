"""A provider's live runs: adopted on publish, pruned once disposed, all disposed by ``aclose``.

``aclose`` disposes every live run concurrently inside a shield; each run's own dispose is bounded, so closing a
provider can neither leak a child nor hang. After ``aclose``, ``check_open`` and ``adopt`` raise.
"""

from __future__ import annotations

from typing import Final

import anyio

from host._exceptions import SubagentHostError
from host._provider_support._child_run import ChildRun

__all__ = ["CLOSED_MESSAGE", "LiveRuns"]

CLOSED_MESSAGE: Final = 'subagent provider "{name}" is closed'
"""``SubagentHostError`` text of a ``start`` on a closed provider."""


async def _dispose_contained(run: ChildRun) -> None:
    try:
        await run.dispose()
    except SubagentHostError:
        # Already reported through the error sink (the `child run failed` line).
        pass


class LiveRuns:
    """The runs one provider published and has not yet seen disposed."""

    def __init__(self, provider_name: str) -> None:
        """Track runs for the provider named ``provider_name`` (used in the closed-provider error)."""
        self._provider_name = provider_name
        self._runs: list[ChildRun] = []
        self._closed = False

    def check_open(self) -> None:
        """Raise ``SubagentHostError`` once the provider was closed."""
        if self._closed:
            raise SubagentHostError(CLOSED_MESSAGE.format(name=self._provider_name))

    async def adopt(self, run: ChildRun) -> None:
        """Track a freshly published run; if the provider closed while it started, dispose it and raise.

        Raises:
            SubagentHostError: the provider was closed during the start (the run was disposed, contained).
        """
        self._runs = [live for live in self._runs if not live.disposed]
        self._runs.append(run)
        if self._closed:  # closed while this run was starting: it must not outlive the provider
            await _dispose_contained(run)
            self.check_open()

    async def aclose(self) -> None:
        """Dispose every live run concurrently (shielded; each dispose is bounded); later starts raise. Idempotent."""
        self._closed = True
        runs, self._runs = self._runs, []
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as group:
                for run in runs:
                    group.start_soon(_dispose_contained, run)
