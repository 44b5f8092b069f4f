"""The command line: every command's options, ``--version``, and the task from TASK, ``-`` (stdin) or ``--file``.

A usage error keeps the ``--json`` promise (one ``{"schema": 1, "error"}`` object on stdout) and exits 2. Stdlib only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from typing import Final, NoReturn

from subagent_host_cli._arguments import add_batch, positive_ms
from subagent_host_cli._help import CHECK_EPILOG, PROVIDERS_EPILOG, RUN_EPILOG, SERVE_EPILOG, TOP_EPILOG
from subagent_host_cli._state_commands import add_runs, add_sessions, add_state_dir, add_ui

__all__ = ["DEFAULT_HTTP_HOST", "DEFAULT_MAX_CONCURRENT_RUNS", "EXIT_USAGE", "ParsedCommand", "parse_command_line"]

EXIT_USAGE: Final = 2
JSON_SCHEMA_VERSION: Final = 1
"""The ``schema`` member that leads every JSON object the CLI prints."""
DEFAULT_MAX_CONCURRENT_RUNS: Final = 8
"""``serve``: the host-wide limit of concurrent tool calls; excess calls queue."""
DEFAULT_HTTP_HOST: Final = "127.0.0.1"
"""``serve``: where ``--http PORT`` or ``--http :PORT`` binds."""
LOG_LEVELS: Final = ("debug", "info", "warning", "error")
LOG_LEVEL_ENV_VAR: Final = "SUBAGENT_HOST_LOG_LEVEL"

_SERVE_DESCRIPTION: Final = (
    "Serve the host's tools (delegate_<name>, job_output, job_list, job_kill, session_list, session_close, "
    "changes_apply) as an MCP server on stdin/stdout, "
    "or over Streamable HTTP with --http. Stdin EOF, SIGTERM, SIGINT and SIGHUP shut it down: every run and job "
    "is torn down and the exit status is 0. Every run is recorded under the state directory unless --no-record."
)
_COMMANDS: Final = "run, runs, sessions, providers, check, serve, ui, batch"
_PROG: Final = "subagent-host"


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    """A valid command line: the parsed namespace (``task`` already read and checked for ``run``)."""

    args: argparse.Namespace
    as_json: bool


class _UsageError(Exception):
    """A usage error of the command ``prog`` (``subagent-host run``, ``subagent-host runs list``, ...)."""

    def __init__(self, message: str, prog: str) -> None:
        super().__init__(message)
        self.prog = prog


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(message, self.prog)


def usage_error_text(message: str, prog: str) -> str:
    """The two stderr lines of a usage error: ``subagent-host: <message>``, then where the command's help is."""
    return f"subagent-host: {message}\ntry '{prog} --help'\n"


def parse_command_line(argv: list[str], *, version: str) -> ParsedCommand | int:
    """Parse ``argv``; return the command, or the exit status of ``--version``, ``--help`` or a usage error."""
    parser = _build(version)
    as_json = "--json" in argv or "--stream-json" in argv
    try:
        try:
            # Unknown arguments are collected, not refused by the top-level parser: the error then names the
            # command they were given to (``run --bogus`` points at ``subagent-host run --help``).
            args, unknown = parser.parse_known_args(argv)
        except SystemExit as exit_request:  # --help printed its text
            return exit_request.code if isinstance(exit_request.code, int) else 0
        prog = _prog_of(args)
        if unknown:
            raise _UsageError(f"unrecognized arguments: {' '.join(unknown)}", prog)
        if args.version:
            _print_version(version, as_json=args.json)
            return 0
        if args.command is None:
            raise _UsageError(f"a command is required ({_COMMANDS})", prog)
        if args.command == "run":
            args.task = _read_task(args, prog)
        if args.command == "runs" and args.runs_command == "show" and args.follow and (args.json or args.stderr):
            raise _UsageError("--follow cannot be combined with --json or --stderr", prog)
        if hasattr(args, "log_level"):  # run, providers, check, batch: `runs`, `serve` and `ui` take no log level
            level = args.log_level or os.environ.get(LOG_LEVEL_ENV_VAR, "warning").lower()
            if level not in LOG_LEVELS:
                raise _UsageError(f"{LOG_LEVEL_ENV_VAR} must be one of {', '.join(LOG_LEVELS)}", prog)
            args.log_level = level
    except _UsageError as exc:
        message = f"subagent-host: {exc}"
        sys.stderr.write(usage_error_text(str(exc), exc.prog))
        sys.stderr.flush()
        if as_json:
            _stdout(json.dumps({"schema": JSON_SCHEMA_VERSION, "error": message}) + "\n")
        return EXIT_USAGE
    as_json = bool(getattr(args, "json", False) or getattr(args, "stream_json", False))
    return ParsedCommand(args=args, as_json=as_json)


def _prog_of(args: argparse.Namespace) -> str:
    """The command the arguments were given to: ``subagent-host``, ``subagent-host run``, ``... runs list``."""
    words = [
        _PROG,
        getattr(args, "command", None),
        getattr(args, "runs_command", None),
        getattr(args, "sessions_command", None),
    ]
    return " ".join(word for word in words if word)


def _print_version(version: str, *, as_json: bool) -> None:
    text = json.dumps({"schema": JSON_SCHEMA_VERSION, "version": version}) + "\n"
    _stdout(text if as_json else f"subagent-host {version}\n")


def _stdout(text: str) -> None:
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except (OSError, AttributeError, ValueError):
        pass  # stdout is closed or broken: the exit status still says what happened


def _build(version: str) -> argparse.ArgumentParser:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = _Parser(
        prog=_PROG,
        description="Run a subtask in an out-of-process ACP or DSH SDK child agent.",
        epilog=TOP_EPILOG,
        formatter_class=formatter,
    )
    parser.add_argument("--version", action="store_true", help=f"print the version ({version}) and exit")
    parser.add_argument("--json", action="store_true", help="with --version: print it as a JSON object")
    common = _Parser(add_help=False)
    common.add_argument("--config", metavar="PATH", help="the TOML config file (default: the lookup order below)")
    common.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    common.add_argument(
        "--log-level", choices=LOG_LEVELS, help=f"host log level on stderr (default: ${LOG_LEVEL_ENV_VAR} or warning)"
    )
    common.add_argument("--log-format", choices=("text", "json"), default="text", help="log line format on stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = sub.add_parser(
        "run",
        parents=[common],
        help="delegate a task to one provider and print its result",
        description="Delegate a task (one text block) to a provider's child agent and print its result.",
        epilog=RUN_EPILOG,
        formatter_class=formatter,
    )
    run.add_argument("--provider", metavar="NAME", help="the provider entry (default: see 'provider:' below)")
    run.add_argument("--cwd", metavar="DIR", help="the parent workspace the child works in (default: .)")
    run.add_argument("--permission", choices=("allow", "reject"), help="override the ACP entry's permission policy")
    run.add_argument("--timeout-ms", metavar="N", type=positive_ms, help="override the entry's timeout_ms")
    run.add_argument(
        "--workspace",
        choices=("shared", "worktree"),
        help="override the entry's workspace: worktree runs the child in a git worktree of its own and keeps its "
        "changes as a branch and a patch (runs apply RUN_ID applies them)",
    )
    run.add_argument("--file", metavar="PATH", help="read the task from a UTF-8 file")
    run.add_argument(
        "--stream-json",
        action="store_true",
        help="print every run record as NDJSON as it happens, then the --json object as the last line",
    )
    _add_recording_arguments(run, "the run")
    continuing = run.add_mutually_exclusive_group()
    continuing.add_argument(
        "--session", metavar="ID", help="continue this session (resumed cold: each command is a new host process)"
    )
    continuing.add_argument(
        "--continue",
        dest="continue_newest",
        action="store_true",
        help="continue the newest session of the chosen provider in this workspace",
    )
    run.add_argument(
        "--if-lost",
        choices=("error", "new"),
        default="error",
        help="when the session cannot be resumed: fail (default) or start a fresh one (context_reset)",
    )
    run.add_argument("task", metavar="TASK", nargs="?", help="the task; - reads it from stdin")
    providers = sub.add_parser(
        "providers",
        parents=[common],
        help="list the configured providers",
        description="List every configured provider: name, kind, command and the file it came from (never env "
        "values), under a header row.",
        epilog=PROVIDERS_EPILOG,
        formatter_class=formatter,
    )
    check = sub.add_parser(
        "check",
        parents=[common],
        help="spawn each provider, run its handshake, tear it down (no prompt)",
        description="For each named provider (default: all), spawn the child, run initialize and session/new (ACP) "
        "or initialize (DSH SDK), tear it down, and print the timings and what the agent said about itself. "
        "Every entry is reported: one whose env needs an unset variable fails alone.",
        epilog=CHECK_EPILOG,
        formatter_class=formatter,
    )
    check.add_argument("--cwd", metavar="DIR", help="the workspace the children start in (default: .)")
    check.add_argument("names", metavar="NAME", nargs="*", help="provider entries to check (default: all)")
    del providers  # no option of its own beyond the common ones
    add_runs(sub, formatter)
    add_sessions(sub, formatter)
    _add_serve(sub, formatter)
    add_ui(sub, formatter)
    add_batch(sub, formatter, common)
    return parser


def _add_recording_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    add_state_dir(parser)
    parser.add_argument("--no-record", action="store_true", help=f"do not record {what} under the state directory")


def _add_serve(sub: argparse._SubParsersAction[_Parser], formatter: type[argparse.HelpFormatter]) -> _Parser:  # pyright: ignore[reportPrivateUsage]
    serve = sub.add_parser(
        "serve",
        help="serve the host's tools as an MCP server",
        description=_SERVE_DESCRIPTION,
        epilog=SERVE_EPILOG,
        formatter_class=formatter,
    )
    serve.add_argument("--config", metavar="PATH", help="the TOML config file (default: the lookup order)")
    serve.add_argument(
        "--max-concurrent-runs",
        metavar="N",
        type=int,
        help="host-wide limit of concurrent runs, foreground calls and background jobs together; excess runs queue "
        f"(default: [host] max_concurrent_runs, else {DEFAULT_MAX_CONCURRENT_RUNS})",
    )
    serve.add_argument(
        "--http",
        metavar="HOST:PORT",
        help=f"serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio (HOST defaults to {DEFAULT_HTTP_HOST})",
    )
    serve.add_argument(
        "--auth-token-file",
        metavar="PATH",
        help="require 'Authorization: Bearer <token>' on every HTTP request (required for a non-loopback HOST)",
    )
    _add_recording_arguments(serve, "the runs")
    return serve


def _read_task(args: argparse.Namespace, prog: str) -> str:
    """The task text from TASK, ``-`` (stdin) or ``--file``; empty, whitespace-only or non-UTF-8 is a usage error."""
    if args.file is not None and args.task is not None:
        raise _UsageError("give the task as TASK, - or --file, not both", prog)
    if args.file is not None:
        try:
            with open(args.file, "rb") as file:
                data, origin = file.read(), f"--file {args.file}"
        except OSError as exc:
            raise _UsageError(f"cannot read --file {args.file}: {exc.strerror or type(exc).__name__}", prog) from exc
    elif args.task == "-":
        data, origin = sys.stdin.buffer.read(), "stdin"
    elif args.task is not None:
        task = str(args.task)
        try:
            task.encode("utf-8")
        except UnicodeEncodeError:  # argv bytes that were not UTF-8 decode to lone surrogates
            raise _UsageError("TASK is not valid UTF-8", prog) from None
        if not task.strip():
            raise _UsageError("TASK must not be empty or whitespace", prog)
        return task
    else:
        raise _UsageError("a task is required: TASK, - (stdin) or --file PATH", prog)
    try:
        task = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _UsageError(f"the task from {origin} is not valid UTF-8", prog) from None
    if not task.strip():
        raise _UsageError(f"the task from {origin} is empty or whitespace", prog)
    return task
