"""``subagent-host run``: one delegated task, through the host's registry and the provider's delegation tool.

The run is never started straight on a provider: the CLI calls ``delegate_<name>`` and observes the run through
per-call hooks. SIGINT, SIGTERM and SIGHUP cancel the call's signal (a local cancel): the result settles
``aborted`` and is printed at once, then the child goes down through the full teardown ladder (a repeated signal
never skips a rung). A closed or broken stdout cancels the run the same way and ends with exit 141.

The run is recorded under the state directory unless ``--no-record`` (``subagent-host runs`` reads the records
back); ``--stream-json`` prints every record as NDJSON as it happens, then the ``--json`` object as the last line.
In text mode the thinking and tool-call lines go to stderr as they stream (``_live``).
"""

from __future__ import annotations

import argparse
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio

from host import (
    TOOL_ABORTED,
    TOOL_ABORTED_BEFORE_DISPATCH,
    TOOL_TIMEOUT,
    CancelController,
    ChunkFrame,
    ConfigError,
    EntryConfig,
    EventFrame,
    Host,
    RunHooks,
    RunUsage,
    StreamFrame,
    SubagentResult,
    TextDelta,
    ToolFailure,
    ToolResult,
    ToolSuccess,
    adopt_orphans,
    delegation_tool_name,
    foreground_failure_message,
    reap_orphans,
    resolve_state_dir,
    text_of,
)
from host.cli._arguments import call_arguments
from host.cli._hints import hints_for
from host.cli._internals import encode_line
from host.cli._live import LiveDetail
from host.cli._output import Output
from host.cli._select import UsageError, choose_provider, config_error_text, load, with_overrides, workspace
from host.cli._status import StatusLine
from host.cli._stderr_tail import print_stderr_tail, read_tail_lines, runs_show_hint
from host.cli._support import (
    EXIT_BROKEN_STDOUT,
    EXIT_BY_SIGNAL,
    HANDLED_SIGNALS,
    RecordedSignals,
    exit_of_stop_reason,
    json_line,
    usage_failure,
    watch_signals,
)

__all__ = ["EXIT_TIMEOUT", "run_task"]

EXIT_TIMEOUT: Final = 124
CONTEXT_RESET_NOTICE: Final = (
    "subagent-host: the session could not be resumed; this answer comes from a fresh session (context reset)"
)
_SIGNALLED_DRAIN_S: Final = 2.0


@dataclass(slots=True)
class _Invocation:
    """What one ``run`` observed: the streamed text, the settled run, the signal, and whether it was printed."""

    provider: str
    entry: EntryConfig
    output: Output
    status: StatusLine
    as_json: bool
    detail: LiveDetail
    stream_json: bool = False
    state_dir: Path | None = None
    pieces: list[str] = field(default_factory=list[str])
    run_id: str | None = None
    session_id: str | None = None
    context_reset: bool = False
    result: SubagentResult | None = None
    changes: dict[str, Any] | None = None
    usage: RunUsage | None = None
    received: signal.Signals | None = None
    printed: bool = False
    recorded_id: str | None = None
    """The run id of the attempt's records (known at its spawn, also when the start failed)."""
    end: dict[str, Any] | None = None
    """The ``run/end`` record's data, once the teardown ended."""

    def on_spawn(self) -> None:
        self.status.set_state("handshake")

    def on_session(self, session_id: str) -> None:
        self.session_id = session_id

    def on_frame(self, frame: StreamFrame) -> None:
        if isinstance(frame, EventFrame) and frame.event.type == "run/start":
            self.status.set_state("running")
        if isinstance(frame, EventFrame) and frame.event.type == "changes":
            self.changes = dict(frame.event.data)
        if not isinstance(frame, ChunkFrame):
            return
        if isinstance(frame.chunk, TextDelta):
            self.status.set_state("running")
            self.pieces.append(frame.chunk.text)  # joined once at the end: += would be quadratic in chunks
            if not self.as_json:
                self.detail.on_chunk(frame.chunk)
                self.output.child_text(frame.chunk.text)
        elif not self.as_json:
            self.detail.on_chunk(frame.chunk)

    def on_record(self, run_id: str, record: dict[str, Any]) -> None:
        """Keep the run id and ``run/end``; ``--stream-json``: each record as one NDJSON line, until the final
        object was printed."""
        self.recorded_id = run_id
        if record["type"] == "run/end":
            self.end = record["data"]
        if self.stream_json and not self.printed:
            self.output.out(encode_line(record, ascii_only=self.output.stdout_tty))

    def on_usage(self, run_id: str, usage: RunUsage) -> None:
        del run_id
        self.usage = usage

    @property
    def attempt_id(self) -> str | None:
        """The run id of the attempt, published or not."""
        return self.run_id or self.recorded_id

    def cause(self) -> str | None:
        """The closed cause of the run's end (a local cancel is ``cancelled`` before its ``run/end`` exists)."""
        if self.end is not None and isinstance(self.end.get("cause"), str):
            return self.end["cause"]
        return "cancelled" if self.received is not None and self.attempt_id is not None else None

    def failed(self, tool_result: ToolResult | None) -> bool:
        """Whether the attempt did not complete for a reason other than our own signal."""
        if self.received is not None or self.attempt_id is None:
            return False
        return self.result is None or self.result.stop_reason != "completed" or _failure_of(tool_result) is not None

    def stderr_tail(self) -> list[str]:
        """The child's last stderr lines, from the run's record (none when the run was not recorded)."""
        run_id = self.attempt_id
        if self.state_dir is None or run_id is None:
            return []
        return read_tail_lines(self.state_dir / "runs" / f"{run_id}.stderr")

    def on_result(self, run_id: str, result: SubagentResult) -> None:
        self.run_id = run_id
        self.result = result
        self.status.set_state("tearing down")
        if self.received is not None:
            # A local cancel: report the aborted result now, before the ladder tears the child down.
            self.report(None)

    def hints(self, tool_result: ToolResult | None) -> list[str]:
        error = _failure_of(tool_result)
        diagnostic = self.result.diagnostic if self.result is not None else None
        if diagnostic is None and error is not None:
            diagnostic = error.error.message  # a startup rejection's safe message: a closed failure line
        timed_out = error is not None and _is_timeout(error)
        non_json = self.end.get("non_json_lines") if self.end is not None else None
        return hints_for(
            self.entry,
            diagnostic=diagnostic,
            timed_out=timed_out,
            timeout_ms=self.entry.timeout_ms,
            non_json_lines=non_json if isinstance(non_json, int) else 0,
        )

    def report(self, tool_result: ToolResult | None) -> None:
        """Print the outcome once: JSON on stdout, or the rest of the text on stdout and failures on stderr."""
        if self.printed:
            return
        self.printed = True
        hints = self.hints(tool_result)
        failed = self.failed(tool_result)
        tail = self.stderr_tail() if failed else []
        if tail and self.attempt_id is not None and self.state_dir is not None:
            hints.append(runs_show_hint(self.attempt_id))
        if self.as_json:
            obj = self.json_object(tool_result)
            if tail:
                obj["stderr_tail"] = tail
            if hints:
                obj["hints"] = hints
            self.output.out(json_line(obj, terminal=self.output.stdout_tty))
        else:
            self.detail.close()
            self.report_text(tool_result)
            if failed or (self.received is not None and self.attempt_id is not None):
                self.output.err(f"subagent-host: run {self.attempt_id} did not complete (cause: {self.cause()})\n")
            print_stderr_tail(self.output, tail, None)
        self.output.err("".join(f"hint: {hint}\n" for hint in hints))

    def json_object(self, tool_result: ToolResult | None) -> dict[str, Any]:
        error = _failure_of(tool_result)
        if self.result is None or self.run_id is None:
            obj: dict[str, Any] = {"provider": self.provider}
            if self.attempt_id is not None:  # a start that failed is a recorded run too
                obj = {"run_id": self.attempt_id, "provider": self.provider}
        else:
            obj = {
                "run_id": self.run_id,
                "provider": self.provider,
                "stop_reason": self.result.stop_reason,
                "output": self.result.output,
            }
            if self.result.diagnostic:
                obj["diagnostic"] = self.result.diagnostic
            if self.changes is not None:
                obj["changes"] = self.changes
            if self.usage is not None:
                obj["usage"] = self.usage.to_json()
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
        cause = self.cause()
        if cause is not None:
            obj["cause"] = cause
        if self.session_id is not None:
            obj["session_id"] = self.session_id
        if self.context_reset:
            obj["context_reset"] = True
        return obj

    def report_text(self, tool_result: ToolResult | None) -> None:
        error = _failure_of(tool_result)
        streamed = "".join(self.pieces)
        if self.context_reset:
            self.output.err(CONTEXT_RESET_NOTICE + "\n")
        if self.result is not None and self.result.stop_reason == "completed":
            final = text_of(self.result.output)
            rest = final[len(streamed) :] if final.startswith(streamed) else final
            self.output.child_text(rest)
            shown = streamed + rest
        else:
            shown = streamed
        if shown and not shown.endswith("\n"):
            self.output.out("\n")
        if error is not None and (_is_timeout(error) or self.result is None or self.result.stop_reason == "completed"):
            self.output.err(error.error.message + "\n")
        elif self.result is not None and self.result.stop_reason != "completed":
            headline = foreground_failure_message(self.result.model_copy(update={"output": []}))
            self.output.err(headline + "\n")

    def exit_status(self, tool_result: ToolResult | None) -> int:
        if self.received is not None:
            return EXIT_BY_SIGNAL[self.received]
        error = _failure_of(tool_result)
        if error is not None and _is_timeout(error):
            return EXIT_TIMEOUT
        if self.result is None:
            return 1
        if error is not None and self.result.stop_reason == "completed":
            return 1
        return exit_of_stop_reason(self.result.stop_reason)


async def run_task(args: argparse.Namespace, recorder: RecordedSignals, output: Output) -> int:
    """Run ``args.task`` on the chosen provider and print the result; return the exit status."""
    as_json = bool(args.json or args.stream_json)
    try:
        config = load(args.config, output)
        provider = choose_provider(config, args.provider)
        config, entry = with_overrides(
            config, provider, permission=args.permission, timeout_ms=args.timeout_ms, workspace=args.workspace
        )
        parent_cwd = workspace(args.cwd)
        arguments = call_arguments(args, entry, parent_cwd)
    except ConfigError as exc:
        return usage_failure(output, config_error_text(exc), as_json=as_json)
    except UsageError as exc:
        return usage_failure(output, str(exc), as_json=as_json)
    status = StatusLine(output, provider)
    invocation = _Invocation(
        provider=provider,
        entry=entry,
        output=output,
        status=status,
        as_json=as_json,
        detail=LiveDetail(output.detail),
        stream_json=bool(args.stream_json),
    )
    state_dir = None if args.no_record else resolve_state_dir(args.state_dir)
    invocation.state_dir = state_dir
    controller = CancelController()
    hooks = RunHooks(
        on_frame=invocation.on_frame,
        on_result=invocation.on_result,
        on_spawn=invocation.on_spawn,
        on_usage=invocation.on_usage,
        on_session=invocation.on_session,
    )
    tool_result: ToolResult | None = None
    broken = False
    # A grandchild that setsid()-s away from a child that then exits escapes the teardown's process-group and
    # psutil snapshot; as the subreaper the CLI adopts it and sweeps it before exiting.
    adopt_orphans()
    draining: list[anyio.CancelScope] = []

    def on_signal(received: signal.Signals) -> None:
        if invocation.received is None:
            invocation.received = received
            recorder.record(received)  # the console entry's last resort knows which signal came first
            controller.cancel(f"received {received.name}")
        for scope in draining:
            scope.cancel()  # a signal while stdout blocks must still end the command

    def on_broken() -> None:
        nonlocal broken
        broken = True
        controller.cancel("stdout was closed")

    with anyio.open_signal_receiver(*HANDLED_SIGNALS) as signals:
        async with anyio.create_task_group() as watchers:
            watchers.start_soon(output.pump)
            watchers.start_soon(watch_signals, signals, on_signal)
            if recorder.first is not None:
                on_signal(recorder.first)
            output.on_broken = on_broken
            watchers.start_soon(status.tick)
            if not controller.signal.cancelled:
                async with Host.open(
                    config,
                    parent_cwd=parent_cwd,
                    state_dir=state_dir,
                    on_record=invocation.on_record,
                ) as host:
                    tool_result = await host.execute(
                        delegation_tool_name(provider), arguments, signal=controller.signal, hooks=hooks
                    )
                    if isinstance(tool_result, ToolSuccess) and isinstance(tool_result.value, dict):
                        invocation.context_reset = tool_result.value.get("context_reset") is True
                # Every child was torn down; what is left was orphaned by it. Still under the signal receiver, so
                # a repeated signal cannot cut the sweep short.
                await reap_orphans(entry.dispose_grace_ms)
            status.clear()
            if tool_result is None:
                assert invocation.received is not None
                message = f"subagent-host: interrupted by {invocation.received.name} before the run started"
                invocation.printed = True
                output.err(message + "\n")
                if as_json:
                    output.out(json_line({"error": message}, terminal=output.stdout_tty))
            elif not broken:
                invocation.report(tool_result)
            with anyio.CancelScope() as drain:
                draining.append(drain)
                if invocation.received is not None:
                    # Interrupted: the result gets a short, bounded chance to reach a stdout nobody may be reading.
                    drain.deadline = anyio.current_time() + _SIGNALLED_DRAIN_S
                await output.drain()
            watchers.cancel_scope.cancel()
    # The receiver restored the default handlers: from now on a late or repeated signal is only recorded, so it
    # cannot kill the process before it exits with the status already decided.
    recorder.reinstall()
    output.finish()
    if invocation.received is None and (broken or output.broken):
        return EXIT_BROKEN_STDOUT
    return invocation.exit_status(tool_result)


def _failure_of(tool_result: ToolResult | None) -> ToolFailure | None:
    return tool_result if isinstance(tool_result, ToolFailure) else None


def _is_registry_abort(failure: ToolFailure) -> bool:
    return failure.error.info is not None and failure.error.info.code in (TOOL_ABORTED, TOOL_ABORTED_BEFORE_DISPATCH)


def _is_timeout(failure: ToolFailure) -> bool:
    return failure.error.info is not None and failure.error.info.code == TOOL_TIMEOUT
