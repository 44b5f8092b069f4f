"""Argument types shared by the commands, and the ``batch`` command's options (kept here so the parser module stays
small). Stdlib only, like the whole console entry.
"""

from __future__ import annotations

import argparse
from typing import Final, TypeVar

from subagent_host_cli._help import BATCH_EPILOG

__all__ = ["DEFAULT_BATCH_WORKERS", "add_batch", "non_negative", "positive", "positive_ms"]

ParserT = TypeVar("ParserT", bound=argparse.ArgumentParser)

DEFAULT_BATCH_WORKERS: Final = 4
"""``batch``: how many items run at once unless ``--workers`` says otherwise."""


def add_batch(
    sub: argparse._SubParsersAction[ParserT],  # pyright: ignore[reportPrivateUsage]
    formatter: type[argparse.HelpFormatter],
    common: ParserT,
) -> ParserT:
    """Add ``batch`` and its options to ``sub`` (the console entry's subcommands)."""
    batch = sub.add_parser(
        "batch",
        parents=[common],
        help="run every task of a JSONL file, resumably, into an output directory",
        description="Run one delegation per line of TASKS.jsonl, --workers at a time, locally or on a Ray cluster. "
        "Results are appended to OUTDIR/results.jsonl as items finish; running the same command again skips the "
        "ids already there. A live progress line is drawn on a stderr terminal only.",
        epilog=BATCH_EPILOG,
        formatter_class=formatter,
    )
    batch.add_argument("tasks", metavar="TASKS.jsonl", help="the items, one JSON object per line")
    batch.add_argument("-o", "--outdir", metavar="OUTDIR", required=True, help="the batch directory")
    batch.add_argument("--provider", metavar="NAME", help="the entry of items that name none")
    batch.add_argument("--cwd", metavar="DIR", help="the workspace of items that name none (default: .)")
    batch.add_argument(
        "--workers",
        metavar="N",
        type=positive,
        default=DEFAULT_BATCH_WORKERS,
        help=f"how many items run at once (default: {DEFAULT_BATCH_WORKERS})",
    )
    batch.add_argument("--executor", choices=("local", "ray"), default="local", help="where items run (default: local)")
    batch.add_argument(
        "--ray-address", metavar="ADDR", help="the Ray cluster (default: $RAY_ADDRESS, else a new local cluster)"
    )
    batch.add_argument("--redo-existing", action="store_true", help="run ids that already have a result again")
    batch.add_argument("--slice", metavar="START:STOP", help="only these items (Python slice bounds)")
    batch.add_argument(
        "--retries",
        metavar="N",
        type=non_negative,
        default=0,
        help="retry an item whose child never answered the handshake or died before answering (default: 0)",
    )
    batch.add_argument(
        "--timeout-ms", metavar="N", type=positive_ms, help="each attempt's deadline (default: the entry's)"
    )
    batch.add_argument("--permission", choices=("allow", "reject"), help="override the ACP entries' permission policy")
    batch.add_argument(
        "--workspace",
        choices=("shared", "worktree"),
        help="the workspace of items that set none (default: the entry's): worktree runs each child in a git "
        "worktree of its own and keeps its changes under OUTDIR (runs apply --state-dir OUTDIR RUN_ID)",
    )
    return batch


def positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1: {value}")
    return number


def non_negative(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {value!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0: {value}")
    return number


def positive_ms(value: str) -> float:
    try:
        milliseconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of milliseconds: {value!r}") from None
    if not 0 < milliseconds <= 2147483647:
        raise argparse.ArgumentTypeError("must be a positive number no greater than 2147483647")
    return milliseconds
