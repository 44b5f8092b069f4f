"""Batches: thousands of delegations from a JSONL file, resumable, run locally or on a Ray cluster.

``open_batch`` (the driver) reads and validates the items (``BatchItem``), skips the ids already in
``results.jsonl`` and hands the rest to an ``Executor``: ``LocalExecutor`` (one ``Host`` in this process) or
``RayExecutor`` (one ``Host`` in each of ``workers`` Ray actors). The driver alone writes the batch
directory: ``results.jsonl`` (one whole line per finished item), ``runs/`` and ``summary.json``. The command line
(``subagent-host batch``) only renders.
"""

from __future__ import annotations

from host.batch._attempt import RETRY_BACKOFF_S, ItemOutcome, ItemPlan, is_infrastructure_failure
from host.batch._driver import BatchResult, BatchRun, HintsOf, open_batch
from host.batch._executor import BatchJob, Executor
from host.batch._items import BatchItem, parse_items, read_items
from host.batch._local import DEFAULT_WORKERS, LocalExecutor
from host.batch._ray import RAY_MISSING, RayExecutor
from host.batch._results import RESULTS_FILE_NAME, ResultsLockedError
from host.batch._summary import SUMMARY_FILE_NAME

__all__ = [
    "DEFAULT_WORKERS",
    "RAY_MISSING",
    "RESULTS_FILE_NAME",
    "RETRY_BACKOFF_S",
    "SUMMARY_FILE_NAME",
    "BatchItem",
    "BatchJob",
    "BatchResult",
    "BatchRun",
    "Executor",
    "HintsOf",
    "ItemOutcome",
    "ItemPlan",
    "LocalExecutor",
    "RayExecutor",
    "ResultsLockedError",
    "is_infrastructure_failure",
    "open_batch",
    "parse_items",
    "read_items",
]
