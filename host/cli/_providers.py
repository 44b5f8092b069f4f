"""``subagent-host providers``: every configured entry's name, kind, command and source file; never env values."""

from __future__ import annotations

import argparse
from typing import Any, Final

from host._exceptions import ConfigError
from host.cli._output import Output
from host.cli._select import config_error_text, load
from host.cli._support import json_line, usage_failure
from host.cli._table import Column, render_table

__all__ = ["list_providers"]

_Row = dict[str, Any]
_COLUMNS: Final[tuple[Column[_Row], ...]] = (
    Column("NAME", lambda row: row["name"], max_width=40),
    Column("KIND", lambda row: row["kind"]),
    Column("COMMAND", lambda row: row["command"]),
    Column("SOURCE", lambda row: row["source"]),
)
_NEEDS: Final[Column[_Row]] = Column("NEEDS", lambda row: " ".join(f"${{{name}}}" for name in row.get("needs", [])))
"""Shown only when some entry needs an unset variable."""


def list_providers(args: argparse.Namespace, output: Output) -> int:
    """Print the entries (a table under a header row, or one JSON object); exit 0, or 2 for a config error."""
    try:
        config = load(args.config, output)
    except ConfigError as exc:
        return usage_failure(output, config_error_text(exc), as_json=args.json)
    rows: list[_Row] = []
    for name in config.entry_names():
        unresolved = config.unresolved.get(name)
        entry = unresolved.entry if unresolved is not None else config.providers[name]
        row: _Row = {"name": name, "kind": entry.kind, "command": entry.command, "source": config.source}
        if unresolved is not None:
            row["needs"] = list(unresolved.missing)
        rows.append(row)
    if args.json:
        output.out(json_line({"source": config.source, "providers": rows}, terminal=output.stdout_tty))
        return 0
    columns = (*_COLUMNS, _NEEDS) if any("needs" in row for row in rows) else _COLUMNS
    output.out(render_table(columns, rows))
    return 0
