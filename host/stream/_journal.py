"""The per-run transcript and its live, totally ordered frame delivery (docs/behaviour.md#stream-transcript to
#stream-delivery-and-freeze).

``RunJournal`` delivers ``run/start`` first, then each chunk synchronously as the provider's reader hands it over,
until the run is frozen; ``finish`` then appends and delivers exactly one ``assistant/message`` or
``assistant/attempt`` and the ``run/end`` event. ``permission`` appends the closed facts of one unattended
permission decision (``{request_kind, policy, decision}``) while the run streams; ``usage`` appends one checked
usage report and folds it into the totals ``run/end`` carries. A raising observer is contained
and logged; it never changes the run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal, TypeAlias, cast

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, field_serializer

from host.diagnostics import PermissionDecision, SubagentResult
from host.stream._assembler import BlockAssembler
from host.stream._chunks import StreamChunk, construct_trusted
from host.stream._log import ChunkLog
from host.stream._usage import RunUsage, UsageCost, UsageTotals

__all__ = [
    "ChunkFrame",
    "EventFrame",
    "FrameObserver",
    "ProviderKind",
    "RunJournal",
    "StreamFrame",
    "TranscriptEvent",
    "TranscriptEventType",
    "usage_of_transcript",
]

logger = logging.getLogger(__name__)

ProviderKind: TypeAlias = Literal["acp", "dsh-sdk"]
TranscriptEventType: TypeAlias = Literal[
    "run/start", "permission", "usage", "assistant/message", "assistant/attempt", "run/end", "changes"
]

_OBSERVER_FAILED: Final = "subagent-host: stream observer failed for run %s: %s"
# Stop reasons whose assembly is a finished message; every other outcome keeps only its stream (an attempt).
_MESSAGE_STOP_REASONS: Final = frozenset({"completed", "max-tokens", "refusal"})
# The explicitly set fields of a chunk frame, as if built with ``ChunkFrame(run_id=..., chunk=...)``.
_FRAME_SET: Final = frozenset({"run_id", "chunk"})


class TranscriptEvent(BaseModel):
    """One transcript entry; ``seq`` counts from 0 per run. Treat ``data`` as read-only.

    A message's or attempt's ``stream`` is a read-only sequence of the run's chunks (compact, not a list); it
    compares equal to a list of the same chunks and serializes as one.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    seq: int
    type: TranscriptEventType
    data: dict[str, Any]

    @field_serializer("data", mode="wrap")
    def _serialize_data(self, data: dict[str, Any], handler: SerializerFunctionWrapHandler) -> object:
        return handler({key: list(value) if isinstance(value, ChunkLog) else value for key, value in data.items()})


class ChunkFrame(BaseModel):
    """A live chunk of one run, delivered while the provider's reader processes the update."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)  # built unvalidated on the hot path

    type: Literal["chunk"] = "chunk"
    run_id: str
    chunk: StreamChunk


class EventFrame(BaseModel):
    """A transcript event of one run, delivered as it is appended."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["event"] = "event"
    run_id: str
    event: TranscriptEvent


StreamFrame: TypeAlias = ChunkFrame | EventFrame
FrameObserver: TypeAlias = Callable[[StreamFrame], None]


class RunJournal:
    """One published run's transcript, stream assembler and frame delivery.

    Args:
        run_id: the host-minted run id every frame carries.
        provider: the provider entry name recorded in ``run/start``.
        kind: the provider kind recorded in ``run/start``.
        on_frame: the synchronous, non-blocking observer of the run's frames, if any.
    """

    def __init__(self, run_id: str, provider: str, kind: ProviderKind, on_frame: FrameObserver | None) -> None:
        self._run_id = run_id
        self._provider = provider
        self._kind: ProviderKind = kind
        self._on_frame = on_frame
        self._events: list[TranscriptEvent] = []
        self._stream = ChunkLog()
        self._assembler = BlockAssembler()
        self._published = False
        self._frozen = False
        self._finished = False
        self._usage = UsageTotals()

    @property
    def usage(self) -> RunUsage | None:
        """The run's usage totals so far (``None``: the child reported none)."""
        return self._usage.totals

    @property
    def frozen(self) -> bool:
        """Whether the run's outcome is fixed: no chunk is recorded or delivered any more."""
        return self._frozen

    @property
    def transcript(self) -> tuple[TranscriptEvent, ...]:
        """A snapshot of the transcript."""
        return tuple(self._events)

    def publish(self) -> None:
        """Append and deliver ``run/start``; idempotent (the first chunk or ``finish`` publishes implicitly)."""
        if self._published:
            return
        self._published = True
        self._append("run/start", {"run_id": self._run_id, "provider": self._provider, "kind": self._kind})

    def chunk(self, chunk: StreamChunk) -> None:
        """Feed, record and deliver one chunk synchronously; a no-op once the run is frozen."""
        if self._frozen:
            return
        if not self._published:
            self.publish()
        self._assembler.feed(chunk)
        self._stream.append(chunk)
        # No observer, no frame: the streaming hot path builds nothing it would throw away.
        if self._on_frame is not None:
            self._deliver(
                construct_trusted(ChunkFrame, {"type": "chunk", "run_id": self._run_id, "chunk": chunk}, _FRAME_SET)
            )

    def permission(self, decision: PermissionDecision) -> None:
        """Append a ``permission`` event with the decision's closed facts; a no-op once frozen or unpublished."""
        if self._frozen or not self._published:
            return
        data = {"request_kind": decision.request, "policy": decision.policy, "decision": decision.decision}
        self._append("permission", data)

    def report_usage(self, report: RunUsage | None, *, cumulative_cost: bool) -> None:
        """Append a ``usage`` event with the report's checked facts and fold it into the totals; a no-op for
        ``None``, once frozen, or unpublished."""
        if report is None or self._frozen or not self._published:
            return
        self._usage.add(report, cumulative_cost=cumulative_cost)
        self._append("usage", report.to_json())

    def freeze(self) -> None:
        """Fix the stream: later chunks are dropped. Idempotent."""
        self._frozen = True

    def finish(self, result: SubagentResult, *, locally_cancelled: bool = False) -> None:
        """Freeze, then append and deliver the run's message or attempt, then ``run/end``. Idempotent.

        Args:
            result: the settled result (after normalization and the bound); ``run/end`` carries exactly its
                ``stop_reason`` and diagnostic.
            locally_cancelled: the outcome was fixed by a local cancel, so the delivered prefix becomes an
                interrupted message when it holds visible text or reasoning.
        """
        self.freeze()
        if self._finished:
            return
        self._finished = True
        self.publish()
        # The log itself, not a copy: the run is frozen, so no chunk is appended to it any more.
        stream = self._stream
        if locally_cancelled:
            content = self._assembler.interrupted_blocks()
            if content:
                self._append("assistant/message", {"content": content, "stream": stream, "interrupted": True})
            else:
                self._append("assistant/attempt", {"stream": stream})
        else:
            content = self._assembler.blocks(result.stop_reason) if result.stop_reason in _MESSAGE_STOP_REASONS else []
            if content:
                self._append("assistant/message", {"content": content, "stream": stream})
            else:
                self._append("assistant/attempt", {"stream": stream})
        end: dict[str, Any] = {"stop_reason": result.stop_reason}
        if result.diagnostic is not None:
            end["diagnostic"] = result.diagnostic
        totals = self._usage.totals
        if totals is not None:
            end["usage"] = totals.to_json()
        self._append("run/end", end)

    def _append(self, event_type: TranscriptEventType, data: dict[str, Any]) -> None:
        event = TranscriptEvent(seq=len(self._events), type=event_type, data=data)
        self._events.append(event)
        # No observer, no frame (as for chunks): a run without one builds nothing it would throw away.
        if self._on_frame is not None:
            self._deliver(EventFrame(run_id=self._run_id, event=event))

    def _deliver(self, frame: StreamFrame) -> None:
        if self._on_frame is None:
            return
        try:
            self._on_frame(frame)
        except Exception as exc:  # containment boundary: a stream observer never changes the run
            logger.warning(_OBSERVER_FAILED, self._run_id, exc)


def usage_of_transcript(transcript: Sequence[TranscriptEvent]) -> RunUsage | None:
    """The usage totals a finished run's ``run/end`` carries (``None``: none, or the run has not ended)."""
    if not transcript or transcript[-1].type != "run/end":
        return None
    data = transcript[-1].data.get("usage")
    if not isinstance(data, dict):
        return None
    usage = cast("dict[str, Any]", data)
    cost = cast("dict[str, Any] | None", usage.get("cost"))
    return RunUsage(
        input_tokens=usage.get("input_tokens"),
        output_tokens=usage.get("output_tokens"),
        context_tokens=usage.get("context_tokens"),
        context_size=usage.get("context_size"),
        cost=UsageCost(cost["amount"], cost["currency"]) if cost is not None else None,
    )
