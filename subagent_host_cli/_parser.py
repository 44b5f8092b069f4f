"""The command line: every command's options, ``--version``, and the task from TASK, ``-`` (stdin) or ``--file``.

A usage error keeps the ``--json`` promise (one ``{"error"}`` object on stdout) and exits 2. Stdlib only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from typing import Final, NoReturn

__all__ = ["EXIT_USAGE", "ParsedCommand", "parse_command_line"]

EXIT_USAGE: Final = 2
LOG_LEVELS: Final = ("debug", "info", "warning", "error")
LOG_LEVEL_ENV_VAR: Final = "SUBAGENT_HOST_LOG_LEVEL"

EXIT_TABLE: Final = """\
exit status:
  0    completed
  1    error, remote cancel, or startup failure (for check: a check failed)
  2    usage or config error
  3    refusal
  4    max-tokens
  124  the entry's timeout_ms (or --timeout-ms) expired; the child was torn down
  129  SIGHUP  (like SIGINT and SIGTERM: the result is printed at once, then the child is torn down)
  130  SIGINT
  141  stdout was closed or broken
  143  SIGTERM

config lookup: --config, $SUBAGENT_HOST_CONFIG (must exist), ./subagent-host.toml then each parent directory,
the user config file (config.toml in the user config dir), then the built-in echo provider.
"""


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    """A valid command line: the parsed namespace (``task`` already read and checked for ``run``)."""

    args: argparse.Namespace
    as_json: bool


class _UsageError(Exception):
    def __init__(self, message: str, usage: str) -> None:
        super().__init__(message)
        self.usage = usage


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _UsageError(message, self.format_usage())


def parse_command_line(argv: list[str], *, version: str) -> ParsedCommand | int:
    """Parse ``argv``; return the command, or the exit status of ``--version``, ``--help`` or a usage error."""
    parser, commands = _build(version)
    as_json = "--json" in argv
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as exit_request:  # --help printed its text
            return exit_request.code if isinstance(exit_request.code, int) else 0
        if args.version:
            _print_version(version, as_json=args.json)
            return 0
        if args.command is None:
            raise _UsageError("a command is required (run, providers, check)", parser.format_usage())
        if args.command == "run":
            args.task = _read_task(args, commands["run"].format_usage())
        level = args.log_level or os.environ.get(LOG_LEVEL_ENV_VAR, "warning").lower()
        if level not in LOG_LEVELS:
            raise _UsageError(
                f"{LOG_LEVEL_ENV_VAR} must be one of {', '.join(LOG_LEVELS)}", commands[args.command].format_usage()
            )
        args.log_level = level
    except _UsageError as exc:
        sys.stderr.write(exc.usage)
        message = f"subagent-host: {exc}"
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
        if as_json:
            _stdout(json.dumps({"error": message}) + "\n")
        return EXIT_USAGE
    return ParsedCommand(args=args, as_json=bool(args.json))


def _print_version(version: str, *, as_json: bool) -> None:
    _stdout(json.dumps({"version": version}) + "\n" if as_json else f"subagent-host {version}\n")


def _stdout(text: str) -> None:
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except (OSError, AttributeError, ValueError):
        pass  # stdout is closed or broken: the exit status still says what happened


def _build(version: str) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = _Parser(
        prog="subagent-host",
        description="Run a subtask in an out-of-process ACP or DSH SDK child agent.",
        epilog=EXIT_TABLE,
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
        epilog=EXIT_TABLE,
        formatter_class=formatter,
    )
    run.add_argument("--provider", metavar="NAME", help="the provider entry (default: the only one, or echo)")
    run.add_argument("--cwd", metavar="DIR", help="the parent workspace the child works in (default: .)")
    run.add_argument("--permission", choices=("allow", "reject"), help="override the ACP entry's permission policy")
    run.add_argument("--timeout-ms", metavar="N", type=_positive_ms, help="override the entry's timeout_ms")
    run.add_argument("--file", metavar="PATH", help="read the task from a UTF-8 file")
    run.add_argument("task", metavar="TASK", nargs="?", help="the task; - reads it from stdin")
    providers = sub.add_parser(
        "providers",
        parents=[common],
        help="list the configured providers",
        description="List every configured provider: name, kind, command and the file it came from (never env "
        "values). Exit 0, or 2 for a config error.",
        formatter_class=formatter,
    )
    check = sub.add_parser(
        "check",
        parents=[common],
        help="spawn each provider, run its handshake, tear it down (no prompt)",
        description="For each named provider (default: all), spawn the child, run initialize and session/new (ACP) "
        "or initialize (DSH SDK), tear it down, and print the timings and what the agent said about itself. "
        "Exit 0 only if every check passed, 1 if one failed, 2 for a usage or config error.",
        formatter_class=formatter,
    )
    check.add_argument("--cwd", metavar="DIR", help="the workspace the children start in (default: .)")
    check.add_argument("names", metavar="NAME", nargs="*", help="provider entries to check (default: all)")
    return parser, {"run": run, "providers": providers, "check": check}


def _positive_ms(value: str) -> float:
    try:
        milliseconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of milliseconds: {value!r}") from None
    if not 0 < milliseconds <= 2147483647:
        raise argparse.ArgumentTypeError("must be a positive number no greater than 2147483647")
    return milliseconds


def _read_task(args: argparse.Namespace, usage: str) -> str:
    """The task text from TASK, ``-`` (stdin) or ``--file``; empty, whitespace-only or non-UTF-8 is a usage error."""
    if args.file is not None and args.task is not None:
        raise _UsageError("give the task as TASK, - or --file, not both", usage)
    if args.file is not None:
        try:
            with open(args.file, "rb") as file:
                data, origin = file.read(), f"--file {args.file}"
        except OSError as exc:
            raise _UsageError(f"cannot read --file {args.file}: {exc.strerror or type(exc).__name__}", usage) from exc
    elif args.task == "-":
        data, origin = sys.stdin.buffer.read(), "stdin"
    elif args.task is not None:
        task = str(args.task)
        try:
            task.encode("utf-8")
        except UnicodeEncodeError:  # argv bytes that were not UTF-8 decode to lone surrogates
            raise _UsageError("TASK is not valid UTF-8", usage) from None
        if not task.strip():
            raise _UsageError("TASK must not be empty or whitespace", usage)
        return task
    else:
        raise _UsageError("a task is required: TASK, - (stdin) or --file PATH", usage)
    try:
        task = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _UsageError(f"the task from {origin} is not valid UTF-8", usage) from None
    if not task.strip():
        raise _UsageError(f"the task from {origin} is empty or whitespace", usage)
    return task
