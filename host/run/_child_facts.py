"""What a run may expose about its child beyond the protocol, for its record: the child's exit facts, the tail of
its stderr, and how many non-JSON lines it wrote to stdout. Found by duck typing (``child_facts_of``), not a
runtime protocol check, which costs ~20 us a check on Python 3.11, several per run."""

from __future__ import annotations

from typing import Protocol, cast

from host.process import ProcessOutcome

__all__ = ["ChildFacts", "StdoutFacts", "child_facts_of", "stdout_facts_of"]


class ChildFacts(Protocol):
    """What a run may expose for its record: the child's exit facts and the tail of its stderr."""

    def child_outcome(self) -> ProcessOutcome | None:
        """The direct child's exit facts, once observed."""
        ...

    def child_stderr(self) -> bytes:
        """The newest bytes of the child's stderr (host-only, never model-visible)."""
        ...


class StdoutFacts(Protocol):
    """What a run may expose about its child's stdout beyond the protocol: the count of non-JSON lines."""

    def child_non_json_lines(self) -> int:
        """How many non-blank lines the child wrote to stdout that were not JSON-RPC messages."""
        ...


def child_facts_of(run: object) -> ChildFacts | None:
    """``run`` when it has ``ChildFacts``' methods (what ``isinstance(run, ChildFacts)`` would test)."""
    if callable(getattr(run, "child_outcome", None)) and callable(getattr(run, "child_stderr", None)):
        return cast("ChildFacts", run)
    return None


def stdout_facts_of(run: object) -> StdoutFacts | None:
    """``run`` when it has ``StdoutFacts``' method."""
    return cast("StdoutFacts", run) if callable(getattr(run, "child_non_json_lines", None)) else None
