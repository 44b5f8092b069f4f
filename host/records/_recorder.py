"""``RunRecorder``: turns one run's frames into transcript records, written to its ``.jsonl`` and/or observed live.

Records are ``{seq, type, time, data}`` (``time`` RFC 3339 UTC). Consecutive text (or reasoning) deltas of one
block coalesce into one ``chunk`` record, flushed at every block boundary, before any other record, and by
``flush`` (which the recording host calls at least every 200 ms). Only closed facts and child content enter a
record: never environment values, raw causes or exception texts. A failed write is logged once and ends the
file's recording; it never changes the run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, TypeAlias

from host._json import ContentBlock
from host.process import ProcessOutcome
from host.records._writer import TranscriptWriter, encode_line
from host.stream import ChunkFrame, EventFrame, ReasoningDelta, StreamFrame, TextDelta

__all__ = ["COALESCE_WINDOW_S", "RecordObserver", "RunRecorder", "RunStartFacts", "rfc3339_now"]

logger = logging.getLogger(__name__)

COALESCE_WINDOW_S: Final = 0.2
"""The longest a streamed delta waits in a coalesced ``chunk`` record before it is flushed."""

RecordObserver: TypeAlias = Callable[[str, dict[str, Any]], None]
"""Receives ``(run_id, record)`` for every record of every recorded run, in order, as it is emitted."""

_WRITE_FAILED: Final = "subagent-host: writing the transcript of run %s failed; recording of it stopped: %s"


def rfc3339_now() -> str:
    """The current UTC time as RFC 3339 with milliseconds and a ``Z`` suffix."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStartFacts:
    """What ``run/start`` and ``prompt`` record beyond the journal's own ``run/start``."""

    cwd: str | None
    """The child's working directory (configured, else the parent session's)."""
    command: str
    """The entry's ``command`` as configured."""
    args: tuple[str, ...]
    """The entry's ``args`` as configured."""
    host_version: str
    """This host's package version."""
    prompt: list[ContentBlock]
    """The content blocks sent to the child."""
    session_id: str | None = None
    """The session this run is a turn of (``None``: a run outside any session)."""
    turn: int | None = None
    """The run's turn number in its session (1 for the first)."""


@dataclass(slots=True)
class _Pending:
    """Coalesced deltas of one text or reasoning block, not yet emitted."""

    chunk_type: str
    index: int
    time: str
    since: float
    parts: list[str] = field(default_factory=list[str])


class RunRecorder:
    """Records one run; feed it the run's frames with ``on_frame``.

    Args:
        start: the extra ``run/start`` facts and the prompt.
        open_writer: creates the run's file from its run id (``None``: observe only, write nothing).
        on_record: the live observer of every record (``None``: none).
        outcome_of: returns the child's exit facts when the run exposes and has observed them.
    """

    def __init__(
        self,
        start: RunStartFacts,
        *,
        open_writer: Callable[[str], TranscriptWriter] | None,
        on_record: RecordObserver | None,
        outcome_of: Callable[[], ProcessOutcome | None] | None = None,
    ) -> None:
        self._start = start
        self._open_writer = open_writer
        self._on_record = on_record
        self._outcome_of = outcome_of
        self._writer: TranscriptWriter | None = None
        self._run_id: str | None = None
        self._seq = 0
        self._pending: _Pending | None = None
        self._started_at = 0.0

    @property
    def run_id(self) -> str | None:
        """The run id, once ``run/start`` was seen."""
        return self._run_id

    @property
    def writer(self) -> TranscriptWriter | None:
        """The open transcript file, if any."""
        return self._writer

    def on_frame(self, frame: StreamFrame) -> None:
        """Record one frame (a synchronous observer, like every ``on_frame``)."""
        if isinstance(frame, ChunkFrame):
            self._on_chunk(frame)
        else:
            self._on_event(frame)

    def flush(self) -> None:
        """Emit the coalesced deltas waiting, if any."""
        pending, self._pending = self._pending, None
        if pending is not None:
            data = {"type": pending.chunk_type, "index": pending.index, "text": "".join(pending.parts)}
            self._emit("chunk", data, at=pending.time)

    def close(self) -> None:
        """Flush and release the file (its lock); idempotent."""
        self.flush()
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()

    # -- frames --------------------------------------------------------------------------------------------------

    def _on_chunk(self, frame: ChunkFrame) -> None:
        chunk = frame.chunk
        if isinstance(chunk, TextDelta | ReasoningDelta):
            pending = self._pending
            now = time.monotonic()
            if pending is not None and pending.chunk_type == chunk.type and pending.index == chunk.index:
                pending.parts.append(chunk.text)
                if now - pending.since >= COALESCE_WINDOW_S:
                    self.flush()
                return
            self.flush()
            self._pending = _Pending(chunk.type, chunk.index, rfc3339_now(), now, [chunk.text])
            return
        self.flush()
        self._emit("chunk", chunk.model_dump(mode="json"))

    def _on_event(self, frame: EventFrame) -> None:
        event = frame.event
        if event.type == "run/start":
            self._begin(frame.run_id, event.data)
        elif event.type == "run/end":
            self._end(event.data)
        else:
            self.flush()
            self._emit(event.type, event.model_dump(mode="json")["data"])

    def _begin(self, run_id: str, data: dict[str, Any]) -> None:
        self._run_id = run_id
        self._started_at = time.monotonic()
        if self._open_writer is not None:
            try:
                self._writer = self._open_writer(run_id)
            except OSError as exc:
                logger.warning(_WRITE_FAILED, run_id, exc.strerror or type(exc).__name__)
        start = self._start
        record: dict[str, Any] = {
            "run_id": run_id,
            "provider": data["provider"],
            "kind": data["kind"],
            "cwd": start.cwd,
            "command": start.command,
            "args": list(start.args),
            "host_version": start.host_version,
        }
        if start.session_id is not None:
            record["session_id"] = start.session_id
            record["turn"] = start.turn
        self._emit("run/start", record)
        self._emit("prompt", {"content": start.prompt})

    def _end(self, data: dict[str, Any]) -> None:
        self.flush()
        end: dict[str, Any] = dict(data)
        end["duration_ms"] = round((time.monotonic() - self._started_at) * 1000)
        outcome = self._outcome_of() if self._outcome_of is not None else None
        if outcome is not None:
            end["exit_code" if outcome.exit_code is not None else "signal"] = (
                outcome.exit_code if outcome.exit_code is not None else outcome.signal
            )
        self._emit("run/end", end)

    def _emit(self, record_type: str, data: dict[str, Any], *, at: str | None = None) -> None:
        assert self._run_id is not None
        record = {"seq": self._seq, "type": record_type, "time": at or rfc3339_now(), "data": data}
        self._seq += 1
        if self._writer is not None:
            try:
                self._writer.write(encode_line(record))
            except OSError as exc:
                logger.warning(_WRITE_FAILED, self._run_id, exc.strerror or type(exc).__name__)
                self._writer.close()
                self._writer = None
        if self._on_record is not None:
            try:
                self._on_record(self._run_id, record)
            except Exception:  # containment boundary: a record observer never changes the run
                logger.exception("subagent-host: record observer failed for run %s", self._run_id)
