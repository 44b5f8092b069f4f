"""``subagent-host run``: one delegated task, through the host's registry and the provider's delegation tool.

The run is never started straight on a provider: the CLI calls ``delegate_<name>`` and observes the run through
per-call hooks. SIGINT/SIGTERM cancel the call's signal (a local cancel): the result settles ``aborted`` and is
printed at once, then the child goes down through the full teardown ladder (a repeated signal never skips a rung).
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, NoReturn, TextIO

import anyio

from host import (
    TOOL_ABORTED,
    TOOL_ABORTED_BEFORE_DISPATCH,
    TOOL_TIMEOUT,
    CancelController,
    ChunkFrame,
    ConfigError,
    Host,
    HostConfig,
    RunHooks,
    StreamFrame,
    SubagentResult,
    TextDelta,
    ToolFailure,
    ToolResult,
    adopt_orphans,
    delegation_tool_name,
    foreground_failure_message,
    load_config,
    reap_orphans,
    text_of,
)

__all__ = [
    "DEFAULT_PROVIDER",
    "EXIT_COMPLETED",
    "EXIT_NOT_COMPLETED",
    "EXIT_SIGINT",
    "EXIT_SIGTERM",
    "EXIT_TIMEOUT",
    "EXIT_USAGE",
    "main",
    "run_cli",
]

DEFAULT_PROVIDER: Final = "echo"
"""Used when several providers are configured, ``--provider`` is absent and one of them is named ``echo``."""
EXIT_COMPLETED: Final = 0
EXIT_NOT_COMPLETED: Final = 1
EXIT_USAGE: Final = 2
EXIT_TIMEOUT: Final = 124
EXIT_SIGINT: Final = 130
EXIT_SIGTERM: Final = 143

_SIGNAL_EXITS: Final = {signal.SIGINT: EXIT_SIGINT, signal.SIGTERM: EXIT_SIGTERM}
_EPILOG: Final = """\
exit status:
  0    the run completed
  1    the run did not complete (cancelled by the child, failed, token limit, refusal),
       or the child could not be started
  2    usage or configuration error
  124  the provider entry's timeout_ms expired (the child was torn down)
  130  interrupted by SIGINT (the result is printed at once, then the child is torn down)
  143  terminated by SIGTERM (likewise)

config lookup: --config, then $SUBAGENT_HOST_CONFIG, then ./subagent-host.toml, then the built-in echo provider.
"""


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """The ``subagent-host`` console script: run the command and exit with its status."""
    for stream in (sys.stdout, sys.stderr):
        # Child text may hold lone surrogates; showing them escaped beats dying with UnicodeEncodeError.
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    sys.exit(run_cli(argv, owns_process=True))


def run_cli(argv: Sequence[str] | None = None, *, owns_process: bool = False) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``), run the command, and return the exit status.

    With ``owns_process`` (the console script), SIGINT/SIGTERM are ignored once the run has ended, so a late or
    repeated signal cannot kill the process before it prints its result and exits with its status.
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser, run_parser = _build_parsers()
    try:
        args = parser.parse_args(arguments)
        if not args.task:
            raise _ArgumentError("TASK must not be empty", run_parser.format_usage())
    except _ArgumentError as exc:
        # A usage error keeps the --json promise: one object on stdout (argparse itself would print only usage).
        _write(sys.stderr, exc.usage)
        return _usage_failure(f"subagent-host: {exc}", "--json" in arguments)
    logging.basicConfig(level=logging.WARNING, format="subagent-host: %(levelname)s %(name)s: %(message)s")
    options = _Options(
        task=args.task,
        config=args.config,
        provider=args.provider,
        cwd=args.cwd,
        as_json=args.json,
        owns_process=owns_process,
    )
    if owns_process:
        # A grandchild that setsid()-s away from a child that then exits escapes the teardown's process-group and
        # psutil snapshot; as the subreaper the CLI adopts it and sweeps it before exiting.
        adopt_orphans()
    return anyio.run(_run, options)


class _ArgumentError(Exception):
    """argparse rejected the command line (raised instead of exiting, so --json can still answer)."""

    def __init__(self, message: str, usage: str) -> None:
        super().__init__(message)
        self.usage = usage


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _ArgumentError(message, self.format_usage())


def _build_parsers() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    parser = _Parser(
        prog="subagent-host",
        description="Run a subtask in an out-of-process ACP or DSH SDK child agent.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run = commands.add_parser(
        "run",
        help="delegate TASK to one provider and print its result",
        description="Delegate TASK (one text block) to a provider's child agent and print its result.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("--config", metavar="PATH", help="the TOML config file")
    run.add_argument(
        "--provider", metavar="NAME", help="the provider entry (default: the only one configured, or echo)"
    )
    run.add_argument("--cwd", metavar="DIR", help="the parent workspace the child works in (default: .)")
    run.add_argument("--json", action="store_true", help="print exactly one JSON object on stdout")
    run.add_argument("task", metavar="TASK", help="the task for the child agent")
    return parser, run


@dataclass(frozen=True, slots=True)
class _Options:
    task: str
    config: str | None
    provider: str | None
    cwd: str | None
    as_json: bool
    owns_process: bool


class _UsageError(Exception):
    """A bad provider choice or workspace: exit 2 with a one-line message."""


@dataclass(slots=True)
class _Invocation:
    """What one ``run`` observed: the streamed text, the settled run, the signal, and whether it was printed."""

    provider: str
    as_json: bool
    pieces: list[str] = field(default_factory=list[str])
    run_id: str | None = None
    result: SubagentResult | None = None
    received: signal.Signals | None = None
    printed: bool = False

    def on_frame(self, frame: StreamFrame) -> None:
        if isinstance(frame, ChunkFrame) and isinstance(frame.chunk, TextDelta):
            self.pieces.append(frame.chunk.text)  # joined once at the end: += would be quadratic in chunks
            if not self.as_json:
                _write(sys.stdout, frame.chunk.text)

    def on_result(self, run_id: str, result: SubagentResult) -> None:
        self.run_id = run_id
        self.result = result
        if self.received is not None:
            # A local cancel: report the aborted result now, before the ladder tears the child down.
            self.report(None)

    def report(self, tool_result: ToolResult | None) -> None:
        """Print the outcome once: JSON on stdout, or the rest of the text on stdout and failures on stderr."""
        if self.printed:
            return
        self.printed = True
        if self.as_json:
            _write(sys.stdout, _json_line(self.json_object(tool_result)))
        else:
            self.report_text(tool_result)

    def json_object(self, tool_result: ToolResult | None) -> dict[str, Any]:
        error = _failure_of(tool_result)
        if self.result is None or self.run_id is None:
            obj: dict[str, Any] = {"provider": self.provider}
        else:
            obj = {
                "run_id": self.run_id,
                "provider": self.provider,
                "stop_reason": self.result.stop_reason,
                "output": self.result.output,
            }
            if self.result.diagnostic:
                obj["diagnostic"] = self.result.diagnostic
            if error is not None and not _is_timeout(error) and self.result.stop_reason != "completed":
                # The tool's failure only restates the run's outcome, which the object already carries.
                error = None
            if error is not None and self.received is not None and _is_registry_abort(error):
                # Our own signal landed after the run had settled (during teardown): the run object is the answer
                # and the exit status already says which signal it was.
                error = None
        if error is not None:
            if _is_timeout(error):
                obj["error_code"] = TOOL_TIMEOUT
            obj["error"] = error.error.message
        return obj

    def report_text(self, tool_result: ToolResult | None) -> None:
        error = _failure_of(tool_result)
        streamed = "".join(self.pieces)
        if self.result is not None and self.result.stop_reason == "completed":
            final = text_of(self.result.output)
            rest = final[len(streamed) :] if final.startswith(streamed) else final
            _write(sys.stdout, rest)
            shown = streamed + rest
        else:
            shown = streamed
        if shown and not shown.endswith("\n"):
            _write(sys.stdout, "\n")
        if error is not None and (_is_timeout(error) or self.result is None or self.result.stop_reason == "completed"):
            _write(sys.stderr, error.error.message + "\n")
        elif self.result is not None and self.result.stop_reason != "completed":
            headline = foreground_failure_message(self.result.model_copy(update={"output": []}))
            _write(sys.stderr, headline + "\n")

    def exit_status(self, tool_result: ToolResult) -> int:
        if self.received is not None:
            return _SIGNAL_EXITS[self.received]
        error = _failure_of(tool_result)
        if error is not None and _is_timeout(error):
            return EXIT_TIMEOUT
        if error is None and self.result is not None and self.result.stop_reason == "completed":
            return EXIT_COMPLETED
        return EXIT_NOT_COMPLETED


async def _run(options: _Options) -> int:
    try:
        config = load_config(options.config)
        provider = _choose_provider(config, options.provider)
        workspace = _workspace(options.cwd)
    except ConfigError as exc:
        return _usage_failure(_config_error_text(exc), options.as_json)
    except _UsageError as exc:
        return _usage_failure(str(exc), options.as_json)
    invocation = _Invocation(provider=provider, as_json=options.as_json)
    controller = CancelController()
    hooks = RunHooks(on_frame=invocation.on_frame, on_result=invocation.on_result)
    tool_result: ToolResult | None = None
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with anyio.create_task_group() as watchers:

            async def watch_signals() -> None:
                async for received in signals:
                    if invocation.received is None:
                        invocation.received = signal.Signals(received)
                        controller.cancel(f"received {signal.Signals(received).name}")
                    # A repeated signal is absorbed: the teardown ladder always runs to its SIGKILL rung.

            watchers.start_soon(watch_signals)
            async with Host.open(config, parent_cwd=workspace) as host:
                tool_result = await host.execute(
                    delegation_tool_name(provider), {"task": options.task}, signal=controller.signal, hooks=hooks
                )
            if options.owns_process:
                # Every child was torn down; what is left was orphaned by it. Still under the signal receiver, so a
                # repeated signal cannot cut the sweep short.
                await reap_orphans(config.providers[provider].dispose_grace_ms)
            watchers.cancel_scope.cancel()
    if options.owns_process:
        # The receiver restored the default handlers; the run is over, so a late (or repeated) signal must not kill
        # the process before it prints its result and exits with the status of the first signal.
        for signum in _SIGNAL_EXITS:
            signal.signal(signum, signal.SIG_IGN)
    # The signal watcher is the only task the group cancels; nothing swallows an error of the call itself.
    assert tool_result is not None
    invocation.report(tool_result)
    return invocation.exit_status(tool_result)


def _choose_provider(config: HostConfig, requested: str | None) -> str:
    names = list(config.providers)
    if requested is not None:
        if requested not in config.providers:
            raise _UsageError(f'subagent-host: unknown provider "{requested}" (configured: {", ".join(names)})')
        return requested
    if len(names) == 1:
        return names[0]
    if DEFAULT_PROVIDER in config.providers:
        return DEFAULT_PROVIDER
    listed = ", ".join(names)
    raise _UsageError(f"subagent-host: several providers are configured ({listed}); choose one with --provider")


def _workspace(cwd: str | None) -> str:
    workspace = os.path.abspath(cwd if cwd is not None else os.getcwd())
    if not os.path.isdir(workspace):
        raise _UsageError(f"subagent-host: --cwd is not a directory: {workspace}")
    return workspace


def _config_error_text(error: ConfigError) -> str:
    """The spec's exact message, followed by the entry and file it is about when known."""
    if error.provider is None:
        return str(error)
    where = f"providers.{error.provider}" + (f" in {error.source}" if error.source else "")
    return f"{error} ({where})"


def _usage_failure(message: str, as_json: bool) -> int:
    _write(sys.stderr, message + "\n")
    if as_json:
        _write(sys.stdout, _json_line({"error": message}))
    return EXIT_USAGE


def _failure_of(tool_result: ToolResult | None) -> ToolFailure | None:
    return tool_result if isinstance(tool_result, ToolFailure) else None


def _is_registry_abort(failure: ToolFailure) -> bool:
    return failure.error.info is not None and failure.error.info.code in (TOOL_ABORTED, TOOL_ABORTED_BEFORE_DISPATCH)


def _is_timeout(failure: ToolFailure) -> bool:
    return failure.error.info is not None and failure.error.info.code == TOOL_TIMEOUT


def _json_line(obj: dict[str, Any]) -> str:
    """One JSON object and a newline; readable UTF-8, or ASCII escapes when the text holds lone surrogates."""
    line = json.dumps(obj, ensure_ascii=False)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        # A child may stream half of a surrogate pair; `\udxxx` escapes keep the object valid and lossless.
        line = json.dumps(obj, ensure_ascii=True)
    return line + "\n"


def _write(stream: TextIO, text: str) -> None:
    stream.write(text)
    stream.flush()
