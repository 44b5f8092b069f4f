"""``subagent-host providers``: every configured entry's name, kind, command and source file; never env values."""

from __future__ import annotations

import argparse
from typing import Any

from host._exceptions import ConfigError
from host.cli._output import Output
from host.cli._select import config_error_text, load
from host.cli._support import json_line, usage_failure

__all__ = ["list_providers"]


def list_providers(args: argparse.Namespace, output: Output) -> int:
    """Print the entries (a table, or one JSON object); exit 0, or 2 for a config error."""
    try:
        config = load(args.config, output)
    except ConfigError as exc:
        return usage_failure(output, config_error_text(exc), as_json=args.json)
    rows: list[dict[str, Any]] = []
    for name in config.entry_names():
        unresolved = config.unresolved.get(name)
        entry = unresolved.entry if unresolved is not None else config.providers[name]
        row: dict[str, Any] = {"name": name, "kind": entry.kind, "command": entry.command, "source": config.source}
        if unresolved is not None:
            row["needs"] = list(unresolved.missing)
        rows.append(row)
    if args.json:
        output.out(json_line({"source": config.source, "providers": rows}, terminal=output.stdout_tty))
        return 0
    width = max(len(row["name"]) for row in rows)
    for row in rows:
        needs = "".join(f"  (needs ${{{name}}})" for name in row.get("needs", []))
        output.out(f"{row['name']:<{width}}  {row['kind']:<7}  {row['command']}  {row['source']}{needs}\n")
    return 0
