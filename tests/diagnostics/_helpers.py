"""Test doubles of the run-handle seam (``SubagentRun``): scripted results and dispose outcomes."""

from __future__ import annotations

from dataclasses import dataclass, field

from host.cancel import CancelSignal
from host.diagnostics import SubagentResult
from host.stream import TranscriptEvent


@dataclass
class ScriptedRun:
    """A run whose ``result()`` and ``dispose()`` outcomes are fixed up front; it records every call."""

    result_value: SubagentResult | None = None
    result_error: Exception | None = None
    dispose_error: Exception | None = None
    id: str = "run-1"
    calls: list[str] = field(default_factory=list[str])

    @property
    def transcript(self) -> tuple[TranscriptEvent, ...]:
        return ()

    async def result(self) -> SubagentResult:
        self.calls.append("result")
        if self.result_error is not None:
            raise self.result_error
        assert self.result_value is not None
        return self.result_value

    async def dispose(self) -> None:
        self.calls.append("dispose")
        if self.dispose_error is not None:
            raise self.dispose_error


@dataclass
class HangingRun:
    """A run that settles ``aborted`` with its partial output only once its signal is cancelled."""

    signal: CancelSignal
    partial: str = ""
    id: str = "run-hang"
    calls: list[str] = field(default_factory=list[str])

    @property
    def transcript(self) -> tuple[TranscriptEvent, ...]:
        return ()

    async def result(self) -> SubagentResult:
        self.calls.append("result")
        await self.signal.wait()
        output = [{"type": "text", "text": self.partial}] if self.partial else []
        return SubagentResult(output=output, stop_reason="aborted")

    async def dispose(self) -> None:
        self.calls.append("dispose")
