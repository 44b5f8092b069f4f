"""``providers`` and ``runs list`` print a header row and aligned columns, through the installed console script.

Text that could break the table (newlines, tabs, escape sequences, bidi overrides, wide characters, runs of spaces
posing as a column) stays inside its cell: every row is one line, every column starts where its header does
(counted in terminal columns), and no control character reaches stdout.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

import anyio
import pytest

from host.records import encode_line
from host.records._paths import ensure_runs_dir
from host.records._writer import TranscriptWriter
from tests.cli._helpers import CLI_TIMEOUT_S, acp_entry, write_config
from tests.cli._script import SCRIPT, run_script, script_env

pytestmark = pytest.mark.anyio

_NASTY = "line\nbreak\ttab \x1b[2J\u202eevil 漢字  completed  spoof"


def _width(text: str) -> int:
    return sum(
        0 if unicodedata.category(char) in ("Mn", "Me") else 2 if unicodedata.east_asian_width(char) in "WF" else 1
        for char in text
    )


def _column_starts(header: str, names: list[str]) -> list[int]:
    return [_width(header[: header.index(name)]) for name in names]


def _starts_at(line: str, cell: str, column: int) -> None:
    """``cell`` starts at display column ``column`` of ``line`` (preceded by at least two spaces)."""
    index = line.index(cell, 1)
    assert _width(line[:index]) == column, (line, cell)
    assert line[index - 2 : index] == "  ", (line, cell)


def _assert_clean(text: str) -> None:
    assert not any(unicodedata.category(char) in ("Cc", "Cf") for char in text.replace("\n", "")), repr(text)


def test_providers_prints_a_header_and_keeps_odd_names_in_their_column(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"plain": acp_entry(), "needy": acp_entry(KEY="${UNSET_FOR_TABLE}")})
    odd = json.dumps("漢字\x1b[31m\tx")  # a TOML basic string: escapes as JSON writes them
    with config.open("a", encoding="utf-8") as file:
        file.write(f'[providers.{odd}]\nkind = "acp"\ncommand = {json.dumps(acp_entry()["command"])}\n')
    env = script_env(tmp_path)
    env.pop("UNSET_FOR_TABLE", None)
    done = run_script("providers", "--config", str(config), cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    text = done.stdout.decode()
    _assert_clean(text)
    header, *rows = text.splitlines()
    assert header.split() == ["NAME", "KIND", "COMMAND", "SOURCE", "NEEDS"]
    assert [row.split()[0] for row in rows] == ["plain", "漢字\\x1b[31m\\tx", "needy"]  # usable ones first
    kind, command, source, needs = _column_starts(header, ["KIND", "COMMAND", "SOURCE", "NEEDS"])
    for row in rows:
        _starts_at(row, "acp", kind)
        _starts_at(row, acp_entry()["command"], command)
        _starts_at(row, str(config), source)
    _starts_at(rows[2], "${UNSET_FOR_TABLE}", needs)


def test_providers_without_unset_variables_has_no_needs_column(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"acp": acp_entry()})
    done = run_script("providers", "--config", str(config), cwd=tmp_path, env=script_env(tmp_path))
    header, row = done.stdout.decode().splitlines()
    assert header.split() == ["NAME", "KIND", "COMMAND", "SOURCE"]
    assert row.split() == ["acp", "acp", acp_entry()["command"], str(config)]


def _hand_written_run(state: Path, run_id: str, provider: str, stop_reason: str) -> None:
    writer = TranscriptWriter.create(ensure_runs_dir(state), run_id)
    start: dict[str, Any] = {"run_id": run_id, "provider": provider, "kind": "acp", "cwd": "/", "command": "x",
                             "args": [], "host_version": "0"}  # fmt: skip
    for seq, (kind, data) in enumerate(
        [
            ("run/start", start),
            ("prompt", {"content": [{"type": "text", "text": "hand"}]}),
            ("run/end", {"stop_reason": stop_reason, "duration_ms": 12}),
        ]
    ):
        writer.write(encode_line({"seq": seq, "type": kind, "time": "2026-01-01T00:00:00.000Z", "data": data}))
    writer.close()


async def test_runs_list_prints_a_header_and_no_cell_can_pose_as_a_column(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"echo\u202ex": acp_entry()})
    state = tmp_path / "state"
    _hand_written_run(state, "hand-run", "prov\n  spoofed  ", "completed\x1b[2J  7 s  x")
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await anyio.run_process(
            [SCRIPT, "run", "--config", str(config), "--state-dir", str(state), "--json", _NASTY],
            cwd=tmp_path, env=script_env(tmp_path), check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    run_id = json.loads(done.stdout)["run_id"]
    listed = run_script("runs", "list", "--state-dir", str(state), cwd=tmp_path, env=script_env(tmp_path))
    assert listed.returncode == 0, listed.stderr
    text = listed.stdout.decode()
    _assert_clean(text)
    header, *rows = text.splitlines()
    assert header.split() == ["RUN", "ID", "STARTED", "PROVIDER", "DURATION", "STATUS", "CAUSE", "COST", "TASK"]
    assert [row.split()[0] for row in rows] == [run_id, "hand-run"]
    started, provider, status, cause, task = _column_starts(header, ["STARTED", "PROVIDER", "STATUS", "CAUSE", "TASK"])
    duration_end = _width(header[: header.index("DURATION") + len("DURATION")])
    newest, hand = rows
    _starts_at(newest, "echo\\u202ex", provider)
    _starts_at(newest, "completed", status)
    assert newest[cause - 2 : cause + len("completed  ")] == "  completed  "  # the cause, under its header
    _starts_at(newest, "line\\nbreak\\ttab \\x1b[2J\\u202eevil 漢字  completed  spoof", task)
    _starts_at(hand, "2026-01-01T00:00:00.000Z", started)
    _starts_at(hand, "prov\\n  spoofed", provider)
    _starts_at(hand, "completed\\x1b[2J  7 s  x", status)
    assert hand[cause - 2 : cause + 3] == "  -  "  # a record without a cause (written by hand, or an older host)
    _starts_at(hand, "hand", task)
    assert _width(hand[: hand.index("12 ms") + len("12 ms")]) == duration_end  # right-aligned under its header
    running = run_script("runs", "list", "--running", "--state-dir", str(state), cwd=tmp_path, env=script_env(tmp_path))
    (only_header,) = running.stdout.decode().splitlines()  # nothing is running: the header alone
    assert only_header.split() == header.split()
