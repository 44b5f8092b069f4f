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
from host.run._attempt import HandshakeFacts
from host.stream import ChunkFrame, EventFrame, ProviderKind, ReasoningDelta, StreamFrame, TextDelta

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

    provider: str
    """The provider entry name."""
    kind: ProviderKind
    """The provider kind."""
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
    job_id: str | None = None
    """The background job the run belongs to (``None``: a foreground run)."""
    label: str | None = None
    """The job's label (recorded with ``job_id``)."""
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
    """Records one run: an attempt observer of its start, and the observer of its frames (``on_frame``).

    ``run/start`` is emitted when the run announces itself, right before its spawn (or, for a run that never
    announces, at its first frame); the journal's own ``run/start`` then adds nothing. ``run/end`` is held from the
    journal's settlement (or a failed start) until ``finish`` (the end of the teardown), which adds the wall time,
    the phases, the cause and the exit facts.

    Args:
        start: the extra ``run/start`` facts and the prompt.
        open_writer: creates the run's file from its run id (``None``: observe only, write nothing).
        on_record: the live observer of every record (``None``: none).
        outcome_of: returns the child's exit facts when the run exposes and has observed them.
        cause_of: the closed ``cause`` of a ``run/end`` from its stop reason and diagnostic.
        non_json_lines: how many non-JSON lines the child wrote to stdout (``None``: not known).
    """

    def __init__(
        self,
        start: RunStartFacts,
        *,
        open_writer: Callable[[str], TranscriptWriter] | None,
        on_record: RecordObserver | None,
        outcome_of: Callable[[], ProcessOutcome | None] | None = None,
        cause_of: Callable[[str, str | None], str] | None = None,
        non_json_lines: Callable[[], int | None] | None = None,
    ) -> None:
        self._start = start
        self._open_writer = open_writer
        self._on_record = on_record
        self._outcome_of = outcome_of
        self._cause_of = cause_of
        self._non_json_lines = non_json_lines
        self._writer: TranscriptWriter | None = None
        self._run_id: str | None = None
        self._seq = 0
        self._pending: _Pending | None = None
        self._clock = _Phases(time.monotonic())
        self._end: dict[str, Any] | None = None
        self._after_end: list[tuple[str, dict[str, Any]]] = []
        self._ended = False
        self._run: object = None
        self._announced: object = None

    @property
    def run_id(self) -> str | None:
        """The run id, once ``run/start`` was emitted."""
        return self._run_id

    @property
    def run(self) -> object:
        """The run whose child facts the record uses: the outermost one adopted, else the one that announced."""
        return self._run

    @property
    def announced(self) -> object:
        """The run that announced itself, if any."""
        return self._announced

    def adopt(self, run: object) -> None:
        """Take the child facts from ``run`` (a wrapper, such as a worktree's, adds its own stderr)."""
        self._run = run

    @property
    def writer(self) -> TranscriptWriter | None:
        """The open transcript file, if any."""
        return self._writer

    # -- the attempt observer (host.run.AttemptObserver) -------------------------------------------------------

    def announce(self, run_id: str, run: object) -> None:
        """The run is about to spawn its child: emit ``run/start`` and ``prompt``."""
        self._run = self._announced = run
        self._begin(run_id)

    def spawned(self) -> None:
        """The child process exists (a spawn observer)."""
        self._clock.spawned = self._clock.spawned or time.monotonic()

    def handshake(self, facts: HandshakeFacts) -> None:
        """The handshake passed: emit ``handshake``."""
        self._clock.handshake = time.monotonic()
        if self._run_id is not None:
            self._emit("handshake", facts.record_data())

    def start_failed(self) -> None:
        """The start failed or was aborted; its rollback teardown comes next."""
        self._clock.settled = self._clock.settled or time.monotonic()

    def fail_start(self, end: dict[str, Any]) -> None:
        """Hold the ``run/end`` of a start that failed (``{stop_reason, diagnostic?}``) until ``finish``."""
        if self._run_id is not None and self._end is None:
            self.start_failed()
            self._end = dict(end)

    # -- frames --------------------------------------------------------------------------------------------------

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

    def finish(self) -> None:
        """Emit the held ``run/end`` (the teardown is over), once."""
        self.flush()
        if self._end is None or self._ended or self._run_id is None:
            return
        self._ended = True
        self._emit("run/end", self._end_data(self._end))
        for record_type, data in self._after_end:
            self._emit(record_type, data)
        self._after_end.clear()

    def close(self) -> None:
        """Emit the held ``run/end`` (``finish``), flush and release the file (its lock); idempotent."""
        self.finish()
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()

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
            if self._run_id is None:
                self._begin(frame.run_id)
        elif event.type == "run/end":
            self.flush()
            self._clock.settled = time.monotonic()
            self._end = dict(event.data)
        elif self._end is not None and not self._ended:
            # Settled: run/end waits for the teardown, and what came after it (a worktree's changes) stays after it.
            self._after_end.append((event.type, event.model_dump(mode="json")["data"]))
        else:
            self.flush()
            self._emit(event.type, event.model_dump(mode="json")["data"])

    def _begin(self, run_id: str) -> None:
        if self._run_id is not None:
            return
        self._run_id = run_id
        if self._open_writer is not None:
            try:
                self._writer = self._open_writer(run_id)
            except OSError as exc:
                logger.warning(_WRITE_FAILED, run_id, exc.strerror or type(exc).__name__)
        start = self._start
        data: dict[str, Any] = {
            "run_id": run_id,
            "provider": start.provider,
            "kind": start.kind,
            "cwd": start.cwd,
            "command": start.command,
            "args": list(start.args),
            "host_version": start.host_version,
        }
        if start.job_id is not None:
            data["job_id"] = start.job_id
            data["label"] = start.label
        if start.session_id is not None:
            data["session_id"] = start.session_id
            data["turn"] = start.turn
        self._emit("run/start", data)
        self._emit("prompt", {"content": start.prompt})

    def _end_data(self, end: dict[str, Any]) -> dict[str, Any]:
        data = dict(end)
        stop_reason = str(data.get("stop_reason"))
        if self._cause_of is not None:
            data["cause"] = self._cause_of(stop_reason, data.get("diagnostic"))
        data.update(self._clock.phases(time.monotonic()))
        outcome = self._outcome_of() if self._outcome_of is not None else None
        if outcome is not None:
            data["exit_code" if outcome.exit_code is not None else "signal"] = (
                outcome.exit_code if outcome.exit_code is not None else outcome.signal
            )
        lines = self._non_json_lines() if self._non_json_lines is not None else None
        if lines:
            data["non_json_lines"] = lines
        return data

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


@dataclass(slots=True)
class _Phases:
    """The moments of one run (``time.monotonic``): begun, spawned, handshake passed, settled."""

    begun: float
    spawned: float | None = None
    handshake: float | None = None
    settled: float | None = None

    def phases(self, now: float) -> dict[str, int]:
        """``duration_ms`` (begun to ``now``, the end of the teardown) and the phases that were reached."""

        def ms(since: float, until: float) -> int:
            return max(0, round((until - since) * 1000))

        settled = self.settled if self.settled is not None else now
        out = {"duration_ms": ms(self.begun, now)}
        if self.spawned is not None:
            out["spawn_ms"] = ms(self.begun, self.spawned)
            out["handshake_ms"] = ms(self.spawned, self.handshake if self.handshake is not None else settled)
        if self.handshake is not None:
            out["prompt_ms"] = ms(self.handshake, settled)
        out["teardown_ms"] = ms(settled, now)
        return out
