"""Every JSON object the CLI prints leads with ``"schema": 1``; ``runs`` and ``serve`` document their options and exit
statuses in ``--help``. Driven through the installed console script."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, cast

import pytest

from tests.cli._helpers import acp_entry, write_config
from tests.cli._script import run_script, script_env


def _first_key_is_schema_1(stdout: bytes) -> dict[str, Any]:
    (line,) = stdout.decode().splitlines()
    data = cast("dict[str, Any]", json.loads(line))
    assert list(data)[0] == "schema" and data["schema"] == 1, data
    return data


def test_providers_json_leads_with_schema_1(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"acp": acp_entry()})
    done = run_script("providers", "--config", str(config), "--json", cwd=tmp_path, env=script_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "providers" in _first_key_is_schema_1(done.stdout)


def test_check_json_leads_with_schema_1(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"acp": acp_entry()})
    done = run_script("check", "--config", str(config), "--json", cwd=tmp_path, env=script_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "checks" in _first_key_is_schema_1(done.stdout)


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--json", "--timeout-ms", "0", "t"],
        ["run", "--stream-json", "--no-such-flag", "t"],
        ["runs", "list", "--json", "--limit", "-1"],
    ],
)
def test_a_usage_error_under_json_leads_with_schema_1(tmp_path: Path, argv: list[str]) -> None:
    done = run_script(*argv, cwd=tmp_path, env=script_env(tmp_path))
    assert done.returncode == 2
    assert "error" in _first_key_is_schema_1(done.stdout)


@pytest.mark.parametrize("argv", [["--version", "--json"], ["--json", "--version"]])
def test_version_json_leads_with_schema_1(tmp_path: Path, argv: list[str]) -> None:
    done = run_script(*argv, cwd=tmp_path, env=script_env(tmp_path))
    assert done.returncode == 0
    assert "version" in _first_key_is_schema_1(done.stdout)


def test_runs_json_leads_with_schema_1(tmp_path: Path) -> None:
    state = tmp_path / "state"
    done = run_script("runs", "list", "--json", "--state-dir", str(state), cwd=tmp_path, env=script_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert _first_key_is_schema_1(done.stdout)["runs"] == []


def test_top_level_help_lists_runs_and_serve(tmp_path: Path) -> None:
    done = run_script("--help", cwd=tmp_path, env=script_env(tmp_path))
    assert done.returncode == 0
    text = done.stdout.decode()
    for command in ("run", "runs", "providers", "check", "serve"):
        assert re.search(rf"^    {command}\s", text, re.MULTILINE), command
    assert "run records: --state-dir, then $SUBAGENT_HOST_STATE_DIR" in text


@pytest.mark.parametrize("action", [[], ["list"], ["show"], ["prune"]])
def test_runs_help_states_the_exit_statuses_and_the_state_directory(tmp_path: Path, action: list[str]) -> None:
    done = run_script("runs", *action, "--help", cwd=tmp_path, env=script_env(tmp_path))
    assert done.returncode == 0
    text = done.stdout.decode()
    assert "2 usage or configuration error" in " ".join(text.split())
    assert "run records: --state-dir, then $SUBAGENT_HOST_STATE_DIR" in text
    # Only `runs show` can exit 1 (and `runs` names it as show's): list and prune do not list it.
    assert ("no run id starts with RUN_ID" in text) == (action in ([], ["show"]))
    if action:
        assert "--state-dir DIR" in text


def test_runs_help_names_each_action(tmp_path: Path) -> None:
    text = run_script("runs", "--help", cwd=tmp_path, env=script_env(tmp_path)).stdout.decode()
    assert "list      the recorded runs, newest first" in text
    assert "show      one run's transcript" in text
    assert "prune     remove all but the newest runs (never one in progress)" in text


@pytest.mark.parametrize("command", ["run", "serve"])
def test_run_and_serve_help_offer_state_dir_and_no_record(tmp_path: Path, command: str) -> None:
    text = run_script(command, "--help", cwd=tmp_path, env=script_env(tmp_path)).stdout.decode()
    assert "--state-dir DIR" in text
    assert "--no-record" in text
