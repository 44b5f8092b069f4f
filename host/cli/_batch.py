"""``subagent-host batch``: a JSONL file of delegations into an output directory, through ``host.open_batch``.

The command only renders: the driver (``host.batch``) validates the input, resumes, runs and writes. SIGINT,
SIGTERM and SIGHUP stop the batch (nothing more starts, the running items are cancelled through the full ladder
and get no result line), the summary is written, and the exit status is 128 + the signal. Otherwise exit 0 when
every selected item completed, 1 when any did not, 2 for a usage, config or input error (nothing ran).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
from typing import Any

import anyio

from host import (
    BatchInputError,
    ConfigError,
    EntryConfig,
    Executor,
    LocalExecutor,
    RayExecutor,
    open_batch,
)
from host.batch import RAY_MISSING, ResultsLockedError
from host.cli._hints import hints_for
from host.cli._output import Output
from host.cli._progress import Progress
from host.cli._select import config_error_text, load
from host.cli._support import (
    EXIT_BY_SIGNAL,
    HANDLED_SIGNALS,
    RecordedSignals,
    json_line,
    usage_failure,
    watch_signals,
)

__all__ = ["run_batch_command"]


def _hints(entry: EntryConfig, line: dict[str, Any]) -> list[str]:
    timed_out = line.get("error_code") == "TOOL_TIMEOUT"
    return hints_for(entry, diagnostic=line.get("diagnostic"), timed_out=timed_out, timeout_ms=None)


async def run_batch_command(args: argparse.Namespace, recorder: RecordedSignals, output: Output) -> int:
    """Run the batch of ``args.tasks`` into ``args.outdir``; return the exit status."""
    as_json = bool(args.json)
    executor: Executor
    if args.executor == "ray":
        if importlib.util.find_spec("ray") is None:
            return usage_failure(output, f"subagent-host: {RAY_MISSING}", as_json=as_json)
        address = args.ray_address if args.ray_address is not None else os.environ.get("RAY_ADDRESS") or None
        executor = RayExecutor(args.workers, address=address)
    else:
        if args.ray_address is not None:
            return usage_failure(output, "subagent-host: --ray-address needs --executor ray", as_json=as_json)
        executor = LocalExecutor(args.workers)
    received: list[signal.Signals] = []
    progress: Progress | None = None
    report: dict[str, Any] = {}
    all_completed = False
    with anyio.open_signal_receiver(*HANDLED_SIGNALS) as signals:
        async with anyio.create_task_group() as watchers:
            watchers.start_soon(output.pump)
            try:
                config = load(args.config, output)
                async with open_batch(
                    args.tasks,
                    outdir=args.outdir,
                    config=config,
                    executor=executor,
                    provider=args.provider,
                    cwd=args.cwd,
                    retries=args.retries,
                    timeout_ms=args.timeout_ms,
                    permission=args.permission,
                    workspace=args.workspace,
                    redo_existing=args.redo_existing,
                    item_slice=args.slice,
                    hints_of=_hints,
                ) as batch:

                    def on_signal(signum: signal.Signals) -> None:
                        if not received:
                            received.append(signum)
                            recorder.record(signum)
                            batch.summary.stopped_by = signum.name
                            batch.stop(f"received {signum.name}")

                    watchers.start_soon(watch_signals, signals, on_signal)
                    if recorder.first is not None:
                        on_signal(recorder.first)
                    summary = batch.summary
                    to_run = summary.pending if not args.redo_existing else len(summary.selected)
                    progress = Progress(output, to_run, lambda: (summary.ran, batch.running, summary.counts()))
                    watchers.start_soon(progress.tick)
                    async for _ in batch:
                        pass
                report = batch.summary.to_json()
                all_completed = batch.summary.all_completed
            except ConfigError as exc:
                watchers.cancel_scope.cancel()
                return usage_failure(output, config_error_text(exc), as_json=as_json)
            except (BatchInputError, ResultsLockedError) as exc:
                watchers.cancel_scope.cancel()
                return usage_failure(output, f"subagent-host: {exc}", as_json=as_json)
            finally:
                if progress is not None:
                    progress.clear()
            _report(output, report, as_json=as_json)
            await output.drain()
            watchers.cancel_scope.cancel()
    recorder.reinstall()
    output.finish()
    if received:
        return EXIT_BY_SIGNAL[received[0]]
    return 0 if all_completed else 1


def _report(output: Output, report: dict[str, Any], *, as_json: bool) -> None:
    if as_json:
        output.out(json_line(report, terminal=output.stdout_tty))
        return
    counts = ", ".join(f"{reason} {count}" for reason, count in sorted(report["counts"].items())) or "no results"
    output.err(
        f"subagent-host: batch: {report['done']}/{report['total']} done ({counts}); {report['pending']} pending; "
        f"{report['ran']} ran, {report['skipped']} skipped\n"
    )
