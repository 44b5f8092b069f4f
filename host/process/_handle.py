"""The process-handle seam: what the providers and the teardown ladder need from a managed child.

Test decorators (docs/behaviour.md#acp-test-seams) wrap a real handle and replace single members (``wait_exit``,
``wait_reaped``, ``wait_outcome``, ``stdout``); every member is therefore a plain method or read-only property.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from anyio.abc import ByteReceiveStream, ByteSendStream

from host.process._outcome import ProcessOutcome

__all__ = ["ProcessHandle", "SupportsAclose"]


class ProcessHandle(Protocol):
    """A managed child and its tree (docs/behaviour.md#process-tree-and-termination).

    A wrapper should also forward ``aclose()`` (see :class:`SupportsAclose`) so that the teardown ladder can
    release the real pipes.
    """

    @property
    def pid(self) -> int:
        """The direct child's pid, which is also its process group id."""
        ...

    @property
    def stdin(self) -> ByteSendStream:
        """The child's stdin (protocol writes)."""
        ...

    @property
    def stdout(self) -> ByteReceiveStream:
        """The child's stdout (protocol reads)."""
        ...

    @property
    def outcome(self) -> ProcessOutcome | None:
        """The direct child's exit facts, once its exit was observed."""
        ...

    async def wait_outcome(self) -> ProcessOutcome:
        """Wait for the direct child's exit and return its facts."""
        ...

    async def wait_exit(self, bound_ms: float) -> bool:
        """Wait at most ``bound_ms`` for the whole tree to be gone; ``True`` once it is."""
        ...

    async def terminate(self) -> None:
        """SIGTERM the tree, then SIGKILL what survives the grace; idempotent."""
        ...

    async def wait_reaped(self) -> None:
        """Wait for the tree to be gone; raise ``ProcessTreeSurvivedError`` past the grace after SIGKILL."""
        ...

    async def close_stdin(self) -> None:
        """Close the child's stdin (EOF); errors of an already-dead pipe are ignored."""
        ...

    def snapshot_descendants(self) -> None:
        """Add the leader's current descendants to the managed tree."""
        ...

    def tree_gone(self) -> bool:
        """Whether the direct child's exit was observed and the whole tree is gone (non-blocking)."""
        ...


@runtime_checkable
class SupportsAclose(Protocol):
    """A handle that can release its pipes and process resources."""

    async def aclose(self) -> None:
        """Close the pipes and release the process; idempotent."""
        ...
