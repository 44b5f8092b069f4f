"""Usage errors and ``--help`` through the installed console script: one line plus where the command's help is.

A usage error prints ``subagent-host: <message>`` and ``try '<the command> --help'`` on stderr (no usage block),
naming the command the bad argument was given to; under ``--json`` stdout still holds the ``{"error"}`` object. Each
command's ``--help`` lists its own exit statuses. The stderr texts are pinned in ``snapshots/cli/usage_errors.json``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.cli._script import run_script, script_env
from tests.snapshots import assert_snapshot

_CASES = {
    "run --bogus": ["run", "--bogus", "task"],
    "run (no task)": ["run"],
    "run --timeout-ms 0": ["run", "--timeout-ms", "0", "task"],
    "runs list --bogus": ["runs", "list", "--bogus"],
    "runs show (no run id)": ["runs", "show"],
    "runs (no action)": ["runs"],
    "no command": [],
}
# argparse's own wording of these differs between Python versions: their shape is checked, not their text.
_UNPINNED = {
    "check --log-level loud": (["check", "--log-level", "loud"], "subagent-host check"),
    "an unknown command": (["runz"], "subagent-host"),
}


def test_every_usage_error_is_one_line_then_the_commands_help(tmp_path: Path) -> None:
    texts: dict[str, list[str]] = {}
    for name, argv in _CASES.items():
        done = run_script(*argv, cwd=tmp_path, env=script_env(tmp_path))
        assert done.returncode == 2, name
        assert done.stdout == b"", name
        texts[name] = done.stderr.decode().splitlines()
    assert_snapshot("cli", "usage_errors", texts)
    for name, lines in texts.items():
        assert len(lines) == 2 and lines[0].startswith("subagent-host: "), (name, lines)
    assert texts["run --bogus"] == ["subagent-host: unrecognized arguments: --bogus", "try 'subagent-host run --help'"]
    for name, (argv, prog) in _UNPINNED.items():
        done = run_script(*argv, cwd=tmp_path, env=script_env(tmp_path))
        lines = done.stderr.decode().splitlines()
        assert done.returncode == 2 and len(lines) == 2, (name, lines)
        assert lines[0].startswith("subagent-host: argument ") and lines[1] == f"try '{prog} --help'", (name, lines)


def test_a_json_usage_error_keeps_its_object_on_stdout(tmp_path: Path) -> None:
    done = run_script("run", "--json", "--bogus", "task", cwd=tmp_path, env=script_env(tmp_path))
    assert done.returncode == 2
    assert json.loads(done.stdout) == {"schema": 1, "error": "subagent-host: unrecognized arguments: --bogus"}
    assert done.stderr.decode().splitlines() == [
        "subagent-host: unrecognized arguments: --bogus",
        "try 'subagent-host run --help'",
    ]


_OWN_EXIT_STATUSES: dict[tuple[str, ...], list[str]] = {
    ("run",): ["0    completed", "3    refusal", "124  the entry's timeout_ms"],
    ("providers",): ["0  listed", "2  usage or config error"],
    ("check",): ["0    every check passed", "1    a check failed"],
    ("runs", "list"): ["0  success", "2  usage or configuration error"],
    ("runs", "show"): ["1    no run id starts with RUN_ID, or several do", "130 SIGINT"],
    ("runs", "prune"): ["0  success", "2  usage or configuration error"],
    ("serve",): ["0    shut down cleanly"],
    ("batch",): ["0    every selected item completed", "1    an item did not complete", "130 SIGINT"],
}


@pytest.mark.parametrize("command", list(_OWN_EXIT_STATUSES), ids=" ".join)
def test_each_command_shows_its_own_usage_and_exit_statuses(tmp_path: Path, command: tuple[str, ...]) -> None:
    done = run_script(*command, "--help", cwd=tmp_path, env=script_env(tmp_path))
    assert done.returncode == 0
    text = done.stdout.decode()
    assert text.startswith(f"usage: subagent-host {' '.join(command)} ")
    assert "\nexit status:\n" in text
    for line in _OWN_EXIT_STATUSES[command]:
        assert line in text, (command, line)
    if command != ("runs", "show"):
        assert "no run id starts with RUN_ID" not in text  # runs show's status is shown by runs show only


def test_the_top_level_help_points_at_each_commands_own_exit_statuses(tmp_path: Path) -> None:
    text = run_script("--help", cwd=tmp_path, env=script_env(tmp_path)).stdout.decode()
    assert "exit status: each command's --help lists its own." in text
    assert re.search(r"^  124", text, re.MULTILINE) is None
