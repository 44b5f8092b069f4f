"""``RunRecording``: the host's recording of every run its providers start, by composition around each provider.

``wrap`` returns a provider whose runs are recorded: the request's frame observer is teed into a ``RunRecorder``
and the returned run's ``dispose`` writes the stderr tail and releases the transcript. A run whose start failed
emitted no frames and leaves no file. ``run_flusher`` flushes coalesced deltas every ``FLUSH_INTERVAL_S``.

The stderr tail and exit facts come from whatever the run exposes (``ChildFacts``).
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Final, Protocol, runtime_checkable

import anyio

from host._json import ContentBlock
from host._version import package_version
from host.config import EntryConfig
from host.diagnostics import SubagentResult
from host.process import ProcessOutcome
from host.records._paths import ensure_runs_dir
from host.records._recorder import RecordObserver, RunRecorder, RunStartFacts
from host.records._store import count_transcripts, prune_runs
from host.records._writer import TranscriptWriter
from host.run._contracts import Capabilities, Provider, SubagentRequest, SubagentRun
from host.stream import ProviderKind, StreamFrame, TranscriptEvent

__all__ = ["FLUSH_INTERVAL_S", "KEEP_EVERY_RUN", "ChildFacts", "ClosableProvider", "RunRecording"]

logger = logging.getLogger(__name__)

KEEP_EVERY_RUN: Final = sys.maxsize
"""A ``keep_runs`` that turns retention off: no run is ever pruned, and the runs directory is never counted (a
batch directory keeps every run, and counting thousands of files after each run would cost quadratic time)."""
FLUSH_INTERVAL_S: Final = 0.1
"""How often coalesced deltas are flushed (so none waits longer than the 200 ms coalescing window)."""


@runtime_checkable
class ChildFacts(Protocol):
    """What a run may expose for its record: the child's exit facts and the tail of its stderr."""

    def child_outcome(self) -> ProcessOutcome | None:
        """The direct child's exit facts, once observed."""
        ...

    def child_stderr(self) -> bytes:
        """The newest bytes of the child's stderr (host-only, never model-visible)."""
        ...


class ClosableProvider(Provider, Protocol):
    """A provider the host closes."""

    async def aclose(self) -> None:
        """Dispose every live run; later starts raise."""
        ...


class RunRecording:
    """Records the runs of the providers it wraps.

    Args:
        state_dir: where ``runs/`` lives (``None``: nothing is written, records are only observed).
        keep_runs: how many of the newest runs retention keeps after each recorded run.
        on_record: the live observer of every record.
    """

    def __init__(self, *, state_dir: Path | None, keep_runs: int, on_record: RecordObserver | None) -> None:
        self._state_dir = state_dir
        self._keep_runs = keep_runs
        self._on_record = on_record
        self._active: set[RunRecorder] = set()
        self._version = package_version()

    def wrap(self, provider: ClosableProvider, entry: EntryConfig) -> ClosableProvider:
        """The provider, with every run it starts recorded."""
        return _RecordingProvider(self, provider, entry)

    async def run_flusher(self) -> None:
        """Flush every active run's coalesced deltas every ``FLUSH_INTERVAL_S``, until cancelled."""
        while True:
            await anyio.sleep(FLUSH_INTERVAL_S)
            for recorder in list(self._active):
                recorder.flush()

    def close(self) -> None:
        """Release every transcript still open (runs the host closed without a ``dispose`` through us)."""
        for recorder in list(self._active):
            self.finish_run(recorder, None)

    # -- per run -------------------------------------------------------------------------------------------------

    def begin_run(
        self, entry: EntryConfig, request: SubagentRequest, facts: Callable[[], ChildFacts | None]
    ) -> RunRecorder:
        """A recorder for a run of ``entry`` about to start, tracked until ``finish_run``."""
        start = RunStartFacts(
            cwd=request.cwd or (entry.cwd if entry.cwd is not None else request.parent_cwd),
            command=entry.command,
            args=entry.args,
            host_version=self._version,
            prompt=_prompt_sent(entry.kind, request.prompt),
            session_id=request.lease.session_id if request.lease is not None else None,
            turn=request.lease.turn if request.lease is not None else None,
        )

        def outcome_of() -> ProcessOutcome | None:
            run = facts()
            return run.child_outcome() if run is not None else None

        open_writer = self._open_writer if self._state_dir is not None else None
        recorder = RunRecorder(start, open_writer=open_writer, on_record=self._on_record, outcome_of=outcome_of)
        self._active.add(recorder)
        return recorder

    def _open_writer(self, run_id: str) -> TranscriptWriter:
        assert self._state_dir is not None
        return TranscriptWriter.create(ensure_runs_dir(self._state_dir), run_id)

    def finish_run(self, recorder: RunRecorder, stderr: Callable[[], bytes] | None) -> None:
        """Write the run's stderr tail, release its transcript and apply retention; idempotent."""
        if recorder not in self._active:
            return
        self._active.discard(recorder)
        recorder.flush()
        writer = recorder.writer
        if writer is not None and stderr is not None:
            try:
                writer.write_stderr(stderr())
            except OSError as exc:
                logger.warning(
                    "subagent-host: writing the stderr tail of run %s failed: %s", recorder.run_id, exc.strerror
                )
        recorder.close()
        if self._state_dir is not None and recorder.run_id is not None and self._keep_runs != KEEP_EVERY_RUN:
            self._prune()

    def _prune(self) -> None:
        assert self._state_dir is not None
        try:
            if count_transcripts(self._state_dir) > self._keep_runs:
                prune_runs(self._state_dir, self._keep_runs)
        except OSError as exc:
            logger.warning("subagent-host: pruning run records failed: %s", exc.strerror)


class _RecordingProvider:
    """A provider whose runs are recorded (composition: every other member forwards)."""

    def __init__(self, recording: RunRecording, inner: ClosableProvider, entry: EntryConfig) -> None:
        self._recording = recording
        self._inner = inner
        self._entry = entry

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def kind(self) -> ProviderKind:
        return self._inner.kind

    @property
    def capabilities(self) -> Capabilities:
        return self._inner.capabilities

    async def start(self, request: SubagentRequest) -> SubagentRun:
        box: list[SubagentRun] = []

        def facts() -> ChildFacts | None:
            return box[0] if box and isinstance(box[0], ChildFacts) else None

        def stderr() -> bytes:
            run = facts()
            return run.child_stderr() if run is not None else b""

        recorder = self._recording.begin_run(self._entry, request, facts)
        observer = request.on_frame

        def observe(frame: StreamFrame) -> None:
            recorder.on_frame(frame)
            if observer is not None:
                observer(frame)

        try:
            run = await self._inner.start(dataclasses.replace(request, on_frame=observe))
        except BaseException:
            self._recording.finish_run(recorder, stderr)
            raise
        box.append(run)
        return _RecordedRun(run, lambda: self._recording.finish_run(recorder, stderr))

    async def aclose(self) -> None:
        await self._inner.aclose()


class _RecordedRun:
    """A run whose ``dispose`` also finishes its record."""

    def __init__(self, inner: SubagentRun, finish: Callable[[], None]) -> None:
        self._inner = inner
        self._finish = finish

    @property
    def id(self) -> str:
        return self._inner.id

    @property
    def transcript(self) -> tuple[TranscriptEvent, ...]:
        return self._inner.transcript

    async def result(self) -> SubagentResult:
        return await self._inner.result()

    async def dispose(self) -> None:
        try:
            await self._inner.dispose()
        finally:
            self._finish()


def _prompt_sent(kind: ProviderKind, prompt: list[ContentBlock]) -> list[ContentBlock]:
    """The blocks the child receives: ACP sends only the text blocks, the DSH SDK the prompt verbatim."""
    if kind == "dsh-sdk":
        return [dict(block) for block in prompt]
    return [
        {"type": "text", "text": block["text"]}
        for block in prompt
        if block.get("type") == "text" and isinstance(block.get("text"), str)
    ]
