"""Durable run records: one JSONL transcript per run under ``<state>/runs/``, its stderr tail, listing and retention.

``RunRecording`` records every run of the providers it wraps (``Host.open(state_dir=...)`` uses it); the store
functions read the runs directory for ``subagent-host runs``. Files are private (0700 directories, 0600 files), and
a transcript holds child content and closed facts only, never environment values, raw causes or exception texts.
"""

from __future__ import annotations

from host.records._paths import resolve_state_dir
from host.records._recorder import RecordObserver
from host.records._recording import KEEP_EVERY_RUN, RunRecording
from host.records._store import (
    AmbiguousRunError,
    RunNotFoundError,
    RunSummary,
    StoredRun,
    find_run,
    find_transcript,
    list_runs,
    prompt_text,
    prune_runs,
    transcript_in_progress,
)
from host.records._tail import TranscriptTail
from host.records._writer import encode_line, write_run_records

__all__ = [
    "KEEP_EVERY_RUN",
    "AmbiguousRunError",
    "RecordObserver",
    "RunNotFoundError",
    "RunSummary",
    "RunRecording",
    "StoredRun",
    "TranscriptTail",
    "encode_line",
    "find_run",
    "find_transcript",
    "list_runs",
    "prompt_text",
    "prune_runs",
    "resolve_state_dir",
    "transcript_in_progress",
    "write_run_records",
]
