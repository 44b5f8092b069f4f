"""``RunRecording``: the host's recording of every run its providers start, by composition around each provider.

``wrap`` returns a provider whose runs are recorded: the request's frame observer is teed into a ``RunRecorder``,
which is also the request's attempt observer (``run/start`` at the spawn, ``handshake``), and the returned run's
``dispose`` emits ``run/end``, writes the stderr tail and releases the transcript. A start that failed after the run
announced itself is recorded the same way, with its diagnostic. ``run_flusher`` flushes coalesced deltas every
``FLUSH_INTERVAL_S``. The stderr tail and exit facts come from whatever the run exposes
(``host.run._child_facts.ChildFacts``).
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Final, Protocol

import anyio

from host._json import ContentBlock
from host._version import package_version
from host.config import EntryConfig
from host.process import ProcessOutcome
from host.records._cause import end_of_failed_start, run_cause
from host.records._paths import ensure_runs_dir
from host.records._recorder import RecordObserver, RunRecorder, RunStartFacts
from host.records._store import count_transcripts, prune_runs
from host.records._writer import TranscriptWriter
from host.run._after_dispose import AfterDisposeRun
from host.run._child_facts import child_facts_of, stdout_facts_of
from host.run._contracts import Capabilities, Provider, SubagentRequest, SubagentRun
from host.run._spawned import also_observe_spawns
from host.stream import ProviderKind, StreamFrame

__all__ = [
    "DROP_PRUNED_TIMEOUT_S",
    "FLUSH_INTERVAL_S",
    "KEEP_EVERY_RUN",
    "ClosableProvider",
    "PrunedRunsHandler",
    "RunRecording",
]

logger = logging.getLogger(__name__)

KEEP_EVERY_RUN: Final = sys.maxsize
"""A ``keep_runs`` that turns retention off: no run is ever pruned, and the runs directory is never counted (a
batch directory keeps every run, and counting thousands of files after each run would cost quadratic time)."""
FLUSH_INTERVAL_S: Final = 0.1
"""How often coalesced deltas are flushed (so none waits longer than the 200 ms coalescing window)."""
DROP_PRUNED_TIMEOUT_S: Final = 60.0
"""Bounds deleting what retention pruned beyond the transcripts (branches, patches) in one run's dispose."""
RECOUNT_EVERY_RUNS: Final = 64
"""Retention counts the runs directory at least once per this many transcripts the host created (and whenever its
own transcripts since the last count could have passed ``keep_runs``); other processes' runs are seen then."""

PrunedRunsHandler = Callable[[list[str]], Awaitable[None]]
"""Deletes what else a pruned run kept (a worktree run's branch, patch and changes file); awaited by the dispose
of the run whose retention pruned them, and only when retention removed something."""


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
        on_pruned: deletes what else the runs retention pruned kept (``Workspaces.delete_branches``).
    """

    def __init__(
        self,
        *,
        state_dir: Path | None,
        keep_runs: int,
        on_record: RecordObserver | None,
        on_pruned: PrunedRunsHandler | None = None,
    ) -> None:
        self._state_dir = state_dir
        self._keep_runs = keep_runs
        self._on_record = on_record
        self._on_pruned = on_pruned
        self._pruned: list[str] = []
        self._counted: int | None = None
        """The transcripts the runs directory held at retention's last count (``None``: not counted yet)."""
        self._created_since_count = 0
        self._active: set[RunRecorder] = set()
        self._version = package_version()
        self._runs: Path | None = None

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
            self.finish_run(recorder)

    # -- per run -------------------------------------------------------------------------------------------------

    def begin_run(self, entry: EntryConfig, request: SubagentRequest, kind: ProviderKind) -> RunRecorder:
        """A recorder for a run of ``entry`` about to start, tracked until ``finish_run``."""
        start = RunStartFacts(
            provider=entry.name,
            kind=kind,
            cwd=request.cwd or (entry.cwd if entry.cwd is not None else request.parent_cwd),
            command=entry.command,
            args=entry.args,
            host_version=self._version,
            prompt=_prompt_sent(entry.kind, request.prompt),
            job_id=request.job_id,
            label=request.label if request.job_id is not None else None,
            session_id=request.lease.session_id if request.lease is not None else None,
            turn=request.lease.turn if request.lease is not None else None,
        )
        box: list[RunRecorder] = []

        def outcome_of() -> ProcessOutcome | None:
            facts = child_facts_of(box[0].run)
            return facts.child_outcome() if facts is not None else None

        def non_json_lines() -> int | None:
            for run in (box[0].run, box[0].announced):
                facts = stdout_facts_of(run)
                if facts is not None:
                    return facts.child_non_json_lines()
            return None

        def cause_of(stop_reason: str, diagnostic: str | None) -> str:
            return run_cause(stop_reason, diagnostic, request.signal)

        open_writer = self._open_writer if self._state_dir is not None else None
        recorder = RunRecorder(
            start,
            open_writer=open_writer,
            on_record=self._on_record,
            outcome_of=outcome_of,
            cause_of=cause_of,
            non_json_lines=non_json_lines,
        )
        box.append(recorder)
        self._active.add(recorder)
        return recorder

    def _open_writer(self, run_id: str) -> TranscriptWriter:
        assert self._state_dir is not None
        self._created_since_count += 1  # counted before the file exists: an overestimate only recounts sooner
        if self._runs is None:
            self._runs = ensure_runs_dir(self._state_dir)
        try:
            return TranscriptWriter.create(self._runs, run_id)
        except FileNotFoundError:
            # Removed since this host made it: made again (the directories are ensured once, not per run).
            self._runs = ensure_runs_dir(self._state_dir)
            return TranscriptWriter.create(self._runs, run_id)

    def finish_run(self, recorder: RunRecorder) -> None:
        """Emit the run's ``run/end``, write its stderr tail, release its transcript and apply retention; idempotent."""
        if recorder not in self._active:
            return
        self._active.discard(recorder)
        recorder.finish()
        writer = recorder.writer
        facts = child_facts_of(recorder.run)
        if writer is not None and facts is not None:
            try:
                writer.write_stderr(facts.child_stderr())
            except OSError as exc:
                logger.warning(
                    "subagent-host: writing the stderr tail of run %s failed: %s", recorder.run_id, exc.strerror
                )
        recorder.close()
        if self._state_dir is not None and recorder.run_id is not None and self._keep_runs != KEEP_EVERY_RUN:
            self._prune()

    def _prune(self) -> None:
        assert self._state_dir is not None
        created, counted = self._created_since_count, self._counted
        if counted is not None and counted + created <= self._keep_runs and created < RECOUNT_EVERY_RUNS:
            return  # even with every transcript this host created since the last count, the limit holds
        try:
            self._created_since_count = 0
            count = count_transcripts(self._state_dir)
            if count > self._keep_runs:
                removed = prune_runs(self._state_dir, self._keep_runs).removed
                count -= len(removed)
                if self._on_pruned is not None:
                    self._pruned.extend(removed)
            self._counted = count
        except OSError as exc:
            self._counted = None  # count again after the next run
            logger.warning("subagent-host: pruning run records failed: %s", exc.strerror)

    async def drop_pruned(self) -> None:
        """Hand the runs retention pruned since the last call to ``on_pruned`` (shielded, bounded; nothing to do,
        the common case, costs nothing)."""
        if not self._pruned or self._on_pruned is None:
            return
        pruned, self._pruned = self._pruned, []
        with anyio.CancelScope(shield=True), anyio.move_on_after(DROP_PRUNED_TIMEOUT_S):
            try:
                await self._on_pruned(pruned)
            except Exception:  # containment boundary: retention never changes a run's dispose
                logger.warning("subagent-host: deleting what pruned runs kept failed", exc_info=True)


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
        recorder = self._recording.begin_run(self._entry, request, self._inner.kind)
        observer = request.on_frame

        def observe(frame: StreamFrame) -> None:
            recorder.on_frame(frame)
            if observer is not None:
                observer(frame)

        try:
            with also_observe_spawns(recorder.spawned):
                run = await self._inner.start(dataclasses.replace(request, on_frame=observe, on_attempt=recorder))
        except BaseException as exc:
            # A failed start is a recorded run too: its run/end carries the diagnostic and the exit facts.
            recorder.fail_start(end_of_failed_start(exc))
            self._recording.finish_run(recorder)
            raise
        if recorder.run is None:
            recorder.announce(run.id, run)  # a provider that does not announce its runs: its facts, at least
        elif child_facts_of(run) is not None:
            recorder.adopt(run)  # a wrapper's facts win (a worktree's setup output leads its stderr)
        recording = self._recording

        async def finish() -> None:
            recording.finish_run(recorder)
            await recording.drop_pruned()

        return AfterDisposeRun(run, finish)

    async def aclose(self) -> None:
        await self._inner.aclose()


def _prompt_sent(kind: ProviderKind, prompt: list[ContentBlock]) -> list[ContentBlock]:
    """The blocks the child receives: ACP sends only the text blocks, the DSH SDK the prompt verbatim."""
    if kind == "dsh-sdk":
        return [dict(block) for block in prompt]
    return [
        {"type": "text", "text": block["text"]}
        for block in prompt
        if block.get("type") == "text" and isinstance(block.get("text"), str)
    ]
