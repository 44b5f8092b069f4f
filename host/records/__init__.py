"""Durable run records: one JSONL transcript per run under ``<state>/runs/``, its stderr tail, listing and retention.

``RunRecording`` records every run of the providers it wraps (``Host.open(state_dir=...)`` uses it); the store
functions read the runs directory for ``subagent-host runs``. Files are private (0700 directories, 0600 files), and
a transcript holds child content and closed facts only, never environment values, raw causes or exception texts.
"""

from __future__ import annotations

from host.records._paths import STATE_DIR_ENV_VAR, ensure_runs_dir, resolve_state_dir, runs_dir
from host.records._recorder import COALESCE_WINDOW_S, RecordObserver, RunRecorder, RunStartFacts
from host.records._recording import FLUSH_INTERVAL_S, ChildFacts, RunRecording, host_version
from host.records._render import STOPPED_MARKER, THINKING_HEADER, neutralise, tool_line
from host.records._store import (
    DEFAULT_KEEP_RUNS,
    TASK_PREVIEW_CHARS,
    AmbiguousRunError,
    PruneOutcome,
    RunNotFoundError,
    RunSummary,
    StoredRun,
    find_run,
    list_runs,
    prompt_text,
    prune_runs,
    read_records,
)
from host.records._writer import STDERR_TAIL_BYTES, TranscriptWriter, encode_line, jsonl_path, stderr_path

__all__ = [
    "COALESCE_WINDOW_S",
    "DEFAULT_KEEP_RUNS",
    "FLUSH_INTERVAL_S",
    "STATE_DIR_ENV_VAR",
    "STDERR_TAIL_BYTES",
    "STOPPED_MARKER",
    "TASK_PREVIEW_CHARS",
    "THINKING_HEADER",
    "AmbiguousRunError",
    "ChildFacts",
    "PruneOutcome",
    "RecordObserver",
    "RunNotFoundError",
    "RunRecorder",
    "RunRecording",
    "RunStartFacts",
    "RunSummary",
    "StoredRun",
    "TranscriptWriter",
    "encode_line",
    "ensure_runs_dir",
    "find_run",
    "host_version",
    "jsonl_path",
    "list_runs",
    "neutralise",
    "prompt_text",
    "prune_runs",
    "read_records",
    "resolve_state_dir",
    "runs_dir",
    "stderr_path",
    "tool_line",
]
