"""``check`` reports every entry through the installed console script: an unset variable fails only its entry.

Today's behaviour before this: the first entry needing an unset variable stopped the whole command (exit 2) and
no entry was checked. Now that entry is reported, unstarted, as failing, and every other entry is still checked.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli._helpers import acp_entry, write_config
from tests.cli._script import run_script, script_env


def _config(tmp_path: Path) -> Path:
    entries = {"needy": acp_entry(KEY="${CHECK_UNSET_VAR}"), "good": acp_entry(), "also": acp_entry()}
    return write_config(tmp_path, entries)


def _env(tmp_path: Path) -> dict[str, str]:
    env = script_env(tmp_path)
    env.pop("CHECK_UNSET_VAR", None)
    return env


def test_an_entry_with_an_unset_variable_fails_alone_and_the_others_are_checked(tmp_path: Path) -> None:
    config = _config(tmp_path)
    done = run_script("check", "--config", str(config), cwd=tmp_path, env=_env(tmp_path))
    assert done.returncode == 1, done.stderr
    lines = done.stdout.decode().splitlines()
    assert [line.split(":")[0] for line in lines] == ["ok   good", "ok   also", "FAIL needy"]
    assert lines[2] == "FAIL needy: needs ${CHECK_UNSET_VAR}, unset in this environment (not started)"
    assert done.stderr.decode() == (
        "hint: set CHECK_UNSET_VAR in the host's environment, or change [providers.needy.env]\n"
    )


def test_check_json_carries_the_unstarted_entry_with_what_it_needs(tmp_path: Path) -> None:
    config = _config(tmp_path)
    done = run_script("check", "--config", str(config), "--json", "needy", "good", cwd=tmp_path, env=_env(tmp_path))
    assert done.returncode == 1, done.stderr
    needy, good = json.loads(done.stdout)["checks"]
    assert good["name"] == "good" and good["ok"] is True
    assert needy == {
        "name": "needy",
        "kind": "acp",
        "ok": False,
        "timings_ms": {},
        "needs": ["CHECK_UNSET_VAR"],
        "error": "subagent-acp: env.KEY references unset host variable ${CHECK_UNSET_VAR} "
        f"(providers.needy in {config})",
        "hints": ["set CHECK_UNSET_VAR in the host's environment, or change [providers.needy.env]"],
    }
