"""The slice of a run handle the foreground and background adapters need.

``host.run._contracts.SubagentRun`` satisfies it structurally; this layer sits below ``host.run`` and must not
import it.
"""

from __future__ import annotations

from typing import Protocol

from host.diagnostics._result import SubagentResult

__all__ = ["CancelFlag", "SettleableRun"]


class SettleableRun(Protocol):
    """A published run: a result that never raises, and an idempotent dispose."""

    @property
    def id(self) -> str:
        """The host-minted run id."""
        ...

    async def result(self) -> SubagentResult:
        """Wait for the settled result."""
        ...

    async def dispose(self) -> None:
        """Release the child; raises only a safe failure when releasing it failed."""
        ...


class CancelFlag(Protocol):
    """Whatever tells whether a job was cancelled (a ``CancelSignal``)."""

    @property
    def cancelled(self) -> bool:
        """Whether cancellation was requested."""
        ...
