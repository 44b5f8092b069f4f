"""What both out-of-process providers share, so each provider keeps only what its protocol makes different.

``ChildRun`` is the run-handle lifecycle (host id, transcript, local cancel, settle-once result, release-once,
dispose-once); ``EntryProvider`` is a provider entry's name, host lines, start prelude and ``LiveRuns`` (disposed
on ``aclose``, shielded and bounded); ``resolve_child_cwd`` picks and validates the child's working directory.
Providers import this package; it imports neither provider.
"""

from __future__ import annotations

from host._provider_support._child_run import ChildRun, RunContext
from host._provider_support._cwd import resolve_child_cwd
from host._provider_support._entry_provider import EntryProvider
from host._provider_support._live_runs import CLOSED_MESSAGE, LiveRuns

__all__ = ["CLOSED_MESSAGE", "ChildRun", "EntryProvider", "LiveRuns", "RunContext", "resolve_child_cwd"]
