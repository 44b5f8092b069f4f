"""``subagent-host check [NAME…]``: spawn, handshake and tear down each entry, no prompt; exit 0 only if all pass."""

from __future__ import annotations

import argparse
import signal
from typing import Any

import anyio

from host._exceptions import ConfigError
from host.cli._hints import hints_for
from host.cli._output import Output, neutralise
from host.cli._select import UsageError, config_error_text, load, workspace
from host.cli._stderr_tail import print_stderr_tail, tail_lines
from host.cli._support import (
    EXIT_BY_SIGNAL,
    HANDLED_SIGNALS,
    RecordedSignals,
    json_line,
    usage_failure,
    watch_signals,
)
from host.config import EntryConfig, UnresolvedEntry
from host.run._check import CheckReport, check_entry

__all__ = ["check_providers"]


async def check_providers(args: argparse.Namespace, recorder: RecordedSignals, output: Output) -> int:
    """Check the named entries (default: all) one after the other and print what each showed."""
    try:
        config = load(args.config, output)
        names: list[str] = list(args.names) or config.entry_names()
        unknown = [name for name in names if name not in config.entry_names()]
        if unknown:
            raise UsageError(
                f'subagent-host: unknown provider "{unknown[0]}" (configured: {", ".join(config.entry_names())})'
            )
        cwd = workspace(args.cwd)
    except ConfigError as exc:
        return usage_failure(output, config_error_text(exc), as_json=args.json)
    except UsageError as exc:
        return usage_failure(output, str(exc), as_json=args.json)
    # An entry needing an unset variable fails alone, unstarted: every other entry is still checked.
    entries: list[EntryConfig | UnresolvedEntry] = [config.unresolved.get(name) or config.entry(name) for name in names]
    reports: list[CheckReport | UnresolvedEntry] = []
    received: list[signal.Signals] = [recorder.first] if recorder.first is not None else []
    with anyio.open_signal_receiver(*HANDLED_SIGNALS) as signals:
        async with anyio.create_task_group() as group:
            checks = anyio.CancelScope()

            def on_signal(signum: signal.Signals) -> None:
                if not received:
                    received.append(signum)
                checks.cancel()

            group.start_soon(output.pump)
            group.start_soon(watch_signals, signals, on_signal)
            with checks:
                for entry in entries:
                    if received:
                        break
                    if isinstance(entry, UnresolvedEntry):
                        reports.append(entry)
                    else:
                        reports.append(await check_entry(entry, cwd=cwd))
            resolved = {entry.name: entry for entry in entries if not isinstance(entry, UnresolvedEntry)}
            _print(reports, resolved, output, as_json=args.json)
            await output.drain()
            group.cancel_scope.cancel()
    # The receiver restored the default handlers: from now on a late or repeated signal is only recorded, so it
    # cannot kill the process before it exits with the status already decided.
    recorder.reinstall()
    output.finish()
    if received:
        return EXIT_BY_SIGNAL[received[0]]
    return 0 if reports and all(isinstance(report, CheckReport) and report.ok for report in reports) else 1


def _print(
    reports: list[CheckReport | UnresolvedEntry], entries: dict[str, EntryConfig], output: Output, *, as_json: bool
) -> None:
    objects: list[dict[str, Any]] = []
    for report in reports:
        if isinstance(report, UnresolvedEntry):
            obj, text = _unresolved(report)
            objects.append(obj)
            if not as_json:
                output.out(text)
                output.err("".join(f"hint: {hint}\n" for hint in obj["hints"]))
            continue
        hints = hints_for(
            entries[report.name],
            diagnostic=report.diagnostic,
            timed_out=False,
            timeout_ms=None,
            non_json_lines=report.non_json_lines,
        )
        tail = tail_lines(report.stderr_tail) if not report.ok else []
        obj: dict[str, Any] = {
            "name": report.name,
            "kind": report.kind,
            "ok": report.ok,
            "timings_ms": report.timings_ms,
        }
        facts = {
            "agent_name": report.agent_name,
            "agent_version": report.agent_version,
            "protocol_version": report.protocol_version,
        }
        obj.update({key: value for key, value in facts.items() if value is not None})
        if report.auth_methods:
            obj["auth_methods"] = report.auth_methods
        if report.diagnostic is not None:
            obj["diagnostic"] = report.diagnostic
            # The same exit facts a run's record carries (once the child's exit was observed).
            obj.update({key: value for key, value in _exit_facts(report).items() if value is not None})
        if tail:
            obj["stderr_tail"] = tail
        if hints:
            obj["hints"] = hints
        objects.append(obj)
        if not as_json:
            output.out(_text_line(report))
            print_stderr_tail(output, tail, None)
            output.err("".join(f"hint: {hint}\n" for hint in hints))
    if as_json:
        output.out(json_line({"checks": objects}, terminal=output.stdout_tty))


def _unresolved(unresolved: UnresolvedEntry) -> tuple[dict[str, Any], str]:
    """The JSON object and the text line of an entry that was not started: it needs an unset variable."""
    entry, missing = unresolved.entry, list(unresolved.missing)
    needs = ", ".join(f"${{{name}}}" for name in missing)
    obj: dict[str, Any] = {
        "name": entry.name,
        "kind": entry.kind,
        "ok": False,
        "timings_ms": {},
        "needs": missing,
        "error": config_error_text(unresolved.error),
        "hints": [f"set {missing[0]} in the host's environment, or change [providers.{entry.name}.env]"],
    }
    return obj, f"FAIL {entry.name}: needs {needs}, unset in this environment (not started)\n"


def _exit_facts(report: CheckReport) -> dict[str, object]:
    return {"exit_code": report.exit_code, "signal": report.signal}


def _text_line(report: CheckReport) -> str:
    timings = ", ".join(f"{step} {ms:.0f} ms" for step, ms in report.timings_ms.items())
    if not report.ok:
        return f"FAIL {report.name}: {report.diagnostic} ({timings})\n"
    facts: list[str] = [timings]
    if report.agent_name is not None:
        facts.append(f"agent {report.agent_name} {report.agent_version or ''}".rstrip())
    if report.protocol_version is not None:
        facts.append(f"protocol {report.protocol_version}")
    if report.auth_methods:
        facts.append("auth methods: " + ", ".join(report.auth_methods))
    # Agent-supplied names are child text: never able to drive the operator's terminal.
    return neutralise(f"ok   {report.name}: {'; '.join(facts)}") + "\n"
