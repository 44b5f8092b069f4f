"""``subagent-host runs list | show | prune``: read the recorded runs of a state directory.

The arguments are defined in the console entry (``subagent_host_cli._parser``).
Every ``--json`` object carries ``"schema": 1``. Text output neutralises control characters from child text, so
a transcript cannot drive the terminal. Exit status: 0 success, 1 no such run (or an ambiguous prefix), 2 usage
or configuration error.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path
from typing import Any, Final, cast

import pydantic

from host._exceptions import ConfigError
from host.cli._changes import apply_run, changes_lines, delete_pruned_branches, reclaim_worktrees_now, show_patch
from host.cli._render import STOPPED_MARKER, THINKING_HEADER, duration_text, neutralise, tool_line
from host.cli._select import config_error_text
from host.cli._support import JSON_SCHEMA_VERSION, RecordedSignals, json_line
from host.cli._table import Column, render_table
from host.config import load_config
from host.records import (
    AmbiguousRunError,
    RunNotFoundError,
    RunSummary,
    StoredRun,
    find_run,
    find_transcript,
    list_runs,
    prompt_text,
    prune_runs,
    resolve_state_dir,
)
from host.stream import BlockAssembler, stream_chunk_adapter

__all__ = ["run_runs_command", "transcript_lines"]

_EXIT_OK: Final = 0
_EXIT_NOT_FOUND: Final = 1
_EXIT_USAGE: Final = 2
_CURRENCY: Final = re.compile(r"[A-Z]{3}")


_RUN_COLUMNS: Final[tuple[Column[RunSummary], ...]] = (
    Column("RUN ID", lambda s: s.run_id, max_width=40),
    Column("STARTED", lambda s: s.start_time or "-", max_width=30),
    Column("PROVIDER", lambda s: s.provider or "-", max_width=32),
    Column("DURATION", lambda s: duration_text(s.duration_ms), align=">"),
    Column("STATUS", lambda s: s.status, max_width=24),
    Column("CAUSE", lambda s: s.cause or "-", max_width=20),
    Column("COST", lambda s: cost_text(s.usage), align=">"),
    Column("TASK", lambda s: s.task),
)
"""The text columns of ``runs list``, in order: adding a column is one line here (``--json`` lists its keys below)."""


def run_runs_command(args: argparse.Namespace, received: RecordedSignals) -> int:
    """Run ``runs <action>`` and return its exit status."""
    state_dir = resolve_state_dir(args.state_dir)
    if args.runs_command == "list":
        return _list(state_dir, args.limit, as_json=args.json, running=args.running)
    if args.runs_command == "show":
        if args.follow:
            return _follow(state_dir, args.run_id, received)
        if args.patch:
            return show_patch(state_dir, args.run_id)
        return _show(state_dir, args.run_id, as_json=args.json, stderr=args.stderr)
    if args.runs_command == "apply":
        return apply_run(state_dir, args.run_id, check=args.check, as_json=args.json)
    return _prune(state_dir, args.keep, args.config)


def _list(state_dir: Path, limit: int | None, *, as_json: bool, running: bool) -> int:
    summaries = list_runs(state_dir, limit, in_progress_only=running)
    if as_json:
        runs = [
            {
                "run_id": s.run_id,
                "start_time": s.start_time,
                "provider": s.provider,
                "duration_ms": s.duration_ms,
                "status": s.status,
                "cause": s.cause,
                "task": s.task,
                **({"usage": s.usage} if s.usage is not None else {}),
                "session_id": s.session_id,
            }
            for s in summaries
        ]
        _print_json({"schema": JSON_SCHEMA_VERSION, "runs": runs})
        return _EXIT_OK
    _out(render_table(_RUN_COLUMNS, summaries))
    return _EXIT_OK


def _follow(state_dir: Path, prefix: str, received: RecordedSignals) -> int:
    try:
        path = find_transcript(state_dir, prefix)
    except AmbiguousRunError as exc:
        listed = ", ".join(exc.candidates)
        return _fail(f'subagent-host: run id prefix "{neutralise(prefix)}" is ambiguous: {listed}', False)
    except RunNotFoundError:
        return _fail(f'subagent-host: no recorded run matches "{neutralise(prefix)}"', False)
    from host.cli._follow import follow_run

    try:
        return follow_run(path, path.stem, received)
    except FileNotFoundError:  # pruned between the lookup and the open
        return _fail(f'subagent-host: no recorded run matches "{neutralise(prefix)}"', False)


def _show(state_dir: Path, prefix: str, *, as_json: bool, stderr: bool) -> int:
    try:
        run = find_run(state_dir, prefix)
    except AmbiguousRunError as exc:
        listed = ", ".join(exc.candidates)
        return _fail(f'subagent-host: run id prefix "{neutralise(prefix)}" is ambiguous: {listed}', as_json)
    except RunNotFoundError:
        return _fail(f'subagent-host: no recorded run matches "{neutralise(prefix)}"', as_json)
    tail = (run.stderr or b"").decode("utf-8", errors="replace")
    if as_json:
        obj: dict[str, Any] = {"schema": JSON_SCHEMA_VERSION, "run_id": run.run_id, "status": run.status}
        if stderr:
            obj["stderr"] = tail
        else:
            obj["records"] = run.records
        _print_json(obj)
    elif stderr:
        _out(neutralise(tail))
    else:
        _out("\n".join(transcript_lines(run)) + "\n")
    return _EXIT_OK


def _prune(state_dir: Path, keep: int | None, config_path: str | None) -> int:
    if keep is None:
        try:
            keep = load_config(config_path).keep_runs
        except ConfigError as exc:
            _err(config_error_text(exc) + "\n")
            return _EXIT_USAGE
    reclaim_worktrees_now(state_dir)
    outcome = prune_runs(state_dir, keep)
    delete_pruned_branches(state_dir, outcome.removed)
    _out(f"removed {len(outcome.removed)} run(s)")
    if outcome.in_progress:
        _out(f"; kept {len(outcome.in_progress)} in progress")
    _out("\n")
    return _EXIT_OK


# -- the transcript as text ----------------------------------------------------------------------------------------


def transcript_lines(run: StoredRun) -> list[str]:
    """One run's transcript as ``runs show`` prints it (``sessions show`` prints each turn the same way)."""
    start = _data_of(run.records, "run/start")
    end = _data_of(run.records, "run/end")
    start_time = next((r.get("time") for r in run.records if r.get("type") == "run/start"), None)
    lines = [
        f"run {run.run_id}",
        f"provider: {neutralise(str(start.get('provider', '-')))} ({neutralise(str(start.get('kind', '-')))})",
        f"cwd: {neutralise(str(start.get('cwd') or '-'))}",
        f"started: {neutralise(str(start_time or '-'))}",
        f"duration: {duration_text(end.get('duration_ms'))}",
        f"stop reason: {run.status}",
    ]
    session_id = start.get("session_id")
    if isinstance(session_id, str):
        lines.insert(2, f"session: {neutralise(session_id)} (turn {neutralise(str(start.get('turn', '-')))})")
    diagnostic = end.get("diagnostic")
    if isinstance(diagnostic, str):
        lines.append(f"diagnostic: {neutralise(diagnostic)}")
    cause = end.get("cause")
    if isinstance(cause, str):
        lines.append(f"cause: {neutralise(cause)}")
    lines += changes_lines(_data_of(run.records, "changes"))
    lines += ["", "prompt:", neutralise(prompt_text(_data_of(run.records, "prompt").get("content"))), ""]
    message = _data_of(run.records, "assistant/message")
    if message:
        lines.append("message:")
        lines += _block_lines(message.get("content"))
        if message.get("interrupted") is True:
            lines.append(STOPPED_MARKER)
    else:
        lines.append("streamed (no finished message):")
        lines += _block_lines(_assembled(run.records))
    return lines


def _assembled(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    assembler = BlockAssembler()
    for record in records:
        if record.get("type") == "chunk":
            try:
                assembler.feed(stream_chunk_adapter.validate_python(record.get("data")))
            except pydantic.ValidationError:
                continue
    return assembler.blocks("completed")


def _block_lines(content: object) -> list[str]:
    lines: list[str] = []
    for item in cast("list[object]", content) if isinstance(content, list) else []:
        if not isinstance(item, dict):
            continue
        block = cast("dict[str, object]", item)
        block_type, text = block.get("type"), block.get("text")
        if block_type == "text" and isinstance(text, str):
            lines.append(neutralise(text))
        elif block_type == "reasoning" and isinstance(text, str):
            lines += [THINKING_HEADER, neutralise(text)]
        elif block_type == "tool-call":
            lines.append(tool_line(block.get("title"), block.get("kind"), block.get("status")))
        else:
            lines.append(f"[{neutralise(str(block_type))} block]")
    return lines


def _data_of(records: list[dict[str, Any]], record_type: str) -> dict[str, Any]:
    for record in records:
        if record.get("type") == record_type and isinstance(record.get("data"), dict):
            return cast("dict[str, Any]", record["data"])
    return {}


def cost_text(usage: object) -> str:
    """A run's cost as ``<amount> <currency>`` (``-`` when unknown); only a checked number and code are shown."""
    cost = cast("dict[str, object]", usage).get("cost") if isinstance(usage, dict) else None
    amount = cast("dict[str, object]", cost).get("amount") if isinstance(cost, dict) else None
    currency = cast("dict[str, object]", cost).get("currency") if isinstance(cost, dict) else None
    if type(amount) not in (int, float) or not isinstance(currency, str) or not _CURRENCY.fullmatch(currency):
        return "-"
    number = float(cast("float", amount))
    return f"{number:.4f} {currency}" if math.isfinite(number) else "-"


def _fail(message: str, as_json: bool) -> int:
    _err(message + "\n")
    if as_json:
        _print_json({"schema": JSON_SCHEMA_VERSION, "error": message})
    return _EXIT_NOT_FOUND


def _print_json(obj: dict[str, Any]) -> None:
    _out(json_line(obj, terminal=sys.stdout.isatty()))


def _out(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _err(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()
