"""The commands about what the state directory holds: ``runs``, ``sessions`` and ``ui`` (kept apart so the parser
module stays small). Stdlib only, like the whole console entry.
"""

from __future__ import annotations

import argparse
from typing import TypeVar

from subagent_host_cli._arguments import non_negative
from subagent_host_cli._help import (
    RUNS_APPLY_EPILOG,
    RUNS_EPILOG,
    RUNS_LIST_EPILOG,
    RUNS_PRUNE_EPILOG,
    RUNS_SHOW_EPILOG,
    SESSIONS_EPILOG,
    UI_EPILOG,
)

__all__ = ["add_runs", "add_sessions", "add_state_dir", "add_ui"]

ParserT = TypeVar("ParserT", bound=argparse.ArgumentParser)


def add_sessions(sub: argparse._SubParsersAction[ParserT], formatter: type[argparse.HelpFormatter]) -> ParserT:  # pyright: ignore[reportPrivateUsage]
    sessions = sub.add_parser(
        "sessions",
        help="list, show or close delegation sessions",
        description="Read or close the sessions recorded under the state directory (continue one with "
        "`run --session ID`).",
        epilog=SESSIONS_EPILOG,
        formatter_class=formatter,
    )
    actions = sessions.add_subparsers(
        dest="sessions_command", required=True, metavar="ACTION", parser_class=type(sessions)
    )
    listing = actions.add_parser(
        "list",
        help="the sessions, most recently used first",
        description="List the sessions, most recently used first: id, last use, provider, state, turns, label.",
        epilog=SESSIONS_EPILOG,
        formatter_class=formatter,
    )
    add_state_dir(listing)
    listing.add_argument("--json", action="store_true", help='print one JSON object: {"schema": 1, "sessions": [...]}')
    show = actions.add_parser(
        "show",
        help="one session and every turn",
        description="Print a session and every turn as runs show does.",
        epilog=SESSIONS_EPILOG,
        formatter_class=formatter,
    )
    add_state_dir(show)
    show.add_argument("session_id", metavar="ID", help="the session id")
    show.add_argument("--json", action="store_true", help="print one JSON object with every turn's records")
    close = actions.add_parser(
        "close",
        help="close a session",
        description="Close a session: it can no longer be continued.",
        epilog=SESSIONS_EPILOG,
        formatter_class=formatter,
    )
    add_state_dir(close)
    close.add_argument("session_id", metavar="ID", help="the session id")
    return sessions


def add_state_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state-dir",
        metavar="DIR",
        help="where run records live (default: $SUBAGENT_HOST_STATE_DIR, else the user state directory)",
    )


def add_runs(sub: argparse._SubParsersAction[ParserT], formatter: type[argparse.HelpFormatter]) -> ParserT:  # pyright: ignore[reportPrivateUsage]
    runs = sub.add_parser(
        "runs",
        help="list, show or prune recorded runs",
        description="Read the runs recorded under the state directory.",
        epilog=RUNS_EPILOG,
        formatter_class=formatter,
    )
    actions = runs.add_subparsers(dest="runs_command", required=True, metavar="ACTION", parser_class=type(runs))
    listing = actions.add_parser(
        "list",
        help="the recorded runs, newest first",
        description="List the recorded runs, newest first, under a header row: run id, start time, provider, "
        "duration, status, cause, cost, task.",
        epilog=RUNS_LIST_EPILOG,
        formatter_class=formatter,
    )
    listing.add_argument("--json", action="store_true", help='print one JSON object: {"schema": 1, "runs": [...]}')
    listing.add_argument("--limit", type=non_negative, metavar="N", help="show at most N runs")
    listing.add_argument(
        "--running", action="store_true", help="only the runs in progress now (their writer holds the record's lock)"
    )
    add_state_dir(listing)
    show = actions.add_parser(
        "show",
        help="one run's transcript",
        description="Print one recorded run's transcript (child text neutralised), or its child's stderr tail. "
        "With --follow, render the run as it is written, until its run/end.",
        epilog=RUNS_SHOW_EPILOG,
        formatter_class=formatter,
    )
    show.add_argument("run_id", metavar="RUN_ID", help="a run id or a unique prefix of one")
    show.add_argument("--json", action="store_true", help="print one JSON object with every record")
    show.add_argument("--stderr", action="store_true", help="print the child's stderr tail instead")
    show.add_argument(
        "--follow", action="store_true", help="render the run as it is written and exit at its run/end (Ctrl-C stops)"
    )
    show.add_argument("--patch", action="store_true", help="print the binary patch of a worktree run's changes")
    add_state_dir(show)
    apply = actions.add_parser(
        "apply",
        help="apply a worktree run's changes to its repository's working tree",
        description="Apply a worktree run's kept changes to the current working tree of the repository it ran in, "
        "with a three-way merge. All or nothing: on any conflict nothing is written and the conflicting paths are "
        "listed (exit 1). The index, HEAD, branches and stash are never written.",
        epilog=RUNS_APPLY_EPILOG,
        formatter_class=formatter,
    )
    apply.add_argument("run_id", metavar="RUN_ID", help="a run id or a unique prefix of one")
    apply.add_argument("--check", action="store_true", help="only report whether the changes apply; write nothing")
    apply.add_argument("--json", action="store_true", help="print one JSON object")
    add_state_dir(apply)
    prune = actions.add_parser(
        "prune",
        help="remove all but the newest runs (never one in progress)",
        description="Remove all but the newest N recorded runs, with the patches and subagent-host/* branches of "
        "their worktree changes; a run still in progress is never removed. Worktrees left locked by a host that "
        "died are reclaimed first (their changes kept as a patch and a branch).",
        epilog=RUNS_PRUNE_EPILOG,
        formatter_class=formatter,
    )
    prune.add_argument("--keep", type=non_negative, metavar="N", help="how many to keep (default: [host] keep_runs)")
    prune.add_argument("--config", metavar="PATH", help="the TOML config file (for [host] keep_runs)")
    add_state_dir(prune)
    return runs


def add_ui(sub: argparse._SubParsersAction[ParserT], formatter: type[argparse.HelpFormatter]) -> ParserT:  # pyright: ignore[reportPrivateUsage]
    ui = sub.add_parser(
        "ui",
        help="serve a local web dashboard of runs, sessions, batches and changes",
        description=(
            "Serve a local, read-only web dashboard of the state directory's runs (live), sessions, batches and "
            "changes, at http://127.0.0.1:8766/ by default."
        ),
        epilog=UI_EPILOG,
        formatter_class=formatter,
    )
    ui.add_argument("--http", metavar="HOST:PORT", help="where to listen (default: 127.0.0.1:8766; port 0 picks one)")
    ui.add_argument(
        "--auth-token-file",
        metavar="PATH",
        help="require this token (a 0600 file) on every request; required for a non-loopback HOST",
    )
    ui.add_argument("--open", action="store_true", help="open the dashboard in the default browser")
    add_state_dir(ui)
    return ui
