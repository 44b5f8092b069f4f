"""The ``subagent-host`` commands behind the stdlib-only console entry (``subagent_host_cli``).

``run_command`` takes the parsed command line and the first signal recorded during start-up, and returns the exit
status: ``run`` (``_run``), ``runs`` (``_runs``), ``sessions`` (``_sessions``), ``providers`` (``_providers``),
``check`` (``_checks``), ``batch`` (``_batch``) and ``serve`` (``_serve``, over ``host.server``). Only ``run`` is
imported up front: every
other command's module is imported when that command runs (the cold start of ``run``).
"""

from __future__ import annotations

import argparse
import sys

import anyio

from host.cli._logs import install_logging
from host.cli._output import Output
from host.cli._run import run_task
from host.cli._support import RecordedSignals

__all__ = ["run_command"]


def run_command(args: argparse.Namespace, received: RecordedSignals) -> int:
    """Run the parsed command and return its exit status."""
    if args.command == "runs":
        from host.cli._runs import run_runs_command

        return run_runs_command(args, received)
    if args.command == "sessions":
        from host.cli._sessions import run_sessions_command

        return run_sessions_command(args)
    if args.command == "ui":
        return _run_ui(args, received)
    if args.command == "serve":
        from host.cli._serve import run_serve

        return run_serve(args, early_signal=lambda: received.first, owns_process=True)
    try:
        return anyio.run(_dispatch, args, received)
    finally:
        # The loop's receiver restored the default handlers: a late signal must not kill the process before it
        # exits with the status already decided.
        received.reinstall()


def _run_ui(args: argparse.Namespace, received: RecordedSignals) -> int:
    from host.ui import UiUsageError, parse_ui_options, run_ui  # Starlette and uvicorn load only once serving starts

    try:
        options = parse_ui_options(
            state_dir=args.state_dir, address=args.http, token_file=args.auth_token_file, open_browser=args.open
        )
    except UiUsageError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    return run_ui(options, lambda: received.first)


async def _dispatch(args: argparse.Namespace, received: RecordedSignals) -> int:
    output = Output()
    install_logging(output, level=args.log_level, log_format=args.log_format)
    if args.command == "providers":
        from host.cli._providers import list_providers

        return list_providers(args, output)
    if args.command == "check":
        from host.cli._checks import check_providers

        return await check_providers(args, received, output)
    if args.command == "batch":
        from host.cli._batch import run_batch_command

        return await run_batch_command(args, received, output)
    return await run_task(args, received, output)
