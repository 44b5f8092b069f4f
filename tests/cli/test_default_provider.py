"""``[host] default_provider`` through the installed console script: ``run`` without ``--provider`` uses it.

The lookup order is ``--provider``, then ``[host] default_provider``, then the only configured entry, then the entry
named ``echo``; a ``default_provider`` that names no entry (or is not a string) is a config error of every command.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli._helpers import acp_entry, write_config
from tests.cli._script import run_script, script_env


def _config(tmp_path: Path, default: object | None) -> Path:
    config = write_config(tmp_path, {"a": acp_entry(MOCK_TEXT="from a"), "b": acp_entry(MOCK_TEXT="from b")})
    if default is not None:
        with config.open("a", encoding="utf-8") as file:
            file.write(f"[host]\ndefault_provider = {json.dumps(default)}\n")
    return config


def test_run_without_provider_uses_the_default_entry_and_provider_still_wins(tmp_path: Path) -> None:
    config = _config(tmp_path, "b")
    env = script_env(tmp_path)
    by_default = run_script("run", "--config", str(config), "--no-record", "x", cwd=tmp_path, env=env)
    assert (by_default.returncode, by_default.stdout) == (0, b"from b\n"), by_default.stderr
    chosen = run_script("run", "--config", str(config), "--no-record", "--provider", "a", "x", cwd=tmp_path, env=env)
    assert (chosen.returncode, chosen.stdout) == (0, b"from a\n"), chosen.stderr


def test_without_a_default_several_entries_name_the_key_that_would_choose(tmp_path: Path) -> None:
    config = _config(tmp_path, None)
    done = run_script("run", "--config", str(config), "x", cwd=tmp_path, env=script_env(tmp_path))
    assert done.returncode == 2
    assert done.stderr.decode() == (
        "subagent-host: several providers are configured (a, b); choose one with --provider "
        "or set [host] default_provider\n"
    )


@pytest.mark.parametrize(
    ("default", "message"),
    [
        ("c", 'subagent-host: host.default_provider "c" names no provider entry (configured: a, b)'),
        (3, "subagent-host: host.default_provider must be a string"),
    ],
)
def test_a_default_that_names_no_entry_is_a_config_error(tmp_path: Path, default: object, message: str) -> None:
    config = _config(tmp_path, default)
    for command in (["run", "x"], ["providers"], ["check"]):
        done = run_script(*command, "--config", str(config), "--json", cwd=tmp_path, env=script_env(tmp_path))
        assert done.returncode == 2, command
        assert json.loads(done.stdout) == {"schema": 1, "error": message}, command
