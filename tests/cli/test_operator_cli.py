"""The operator CLI: each behaviour driven through the installed ``subagent-host`` script in a subprocess."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli._helpers import acp_entry, one_json_object, write_config
from tests.cli._script import operator_config, operator_entry, run_script, script_env

NOTICE = "using the built-in echo provider"


# 1. Silent echo -------------------------------------------------------------------------------------------------


def test_a_subdirectory_of_a_configured_project_finds_the_project_config(tmp_path: Path) -> None:
    write_config(tmp_path, {"acp": acp_entry(MOCK_TEXT="from the project")})
    deep = tmp_path / "src" / "pkg"
    deep.mkdir(parents=True)
    done = run_script("run", "fix the failing test", cwd=deep, env=script_env(tmp_path))
    assert (done.returncode, done.stdout) == (0, b"from the project\n")
    assert NOTICE.encode() not in done.stderr


def test_without_any_config_every_command_says_it_uses_the_built_in_echo(tmp_path: Path) -> None:
    env = script_env(tmp_path, SUBAGENT_HOST_CONFG="misspelt.toml")
    for command in (["run", "hello"], ["providers"]):
        done = run_script(*command, cwd=tmp_path, env=env)
        assert done.returncode == 0
        lines = [line for line in done.stderr.decode().splitlines() if NOTICE in line]
        assert len(lines) == 1
        assert lines[0].startswith("subagent-host: no config found (searched ")
        assert str(tmp_path / "xdg" / "subagent-host" / "config.toml") in lines[0]


def test_a_config_variable_naming_a_missing_file_is_an_error(tmp_path: Path) -> None:
    env = script_env(tmp_path, SUBAGENT_HOST_CONFIG=str(tmp_path / "nope.toml"))
    done = run_script("run", "--json", "hello", cwd=tmp_path, env=env)
    assert done.returncode == 2
    assert "cannot read config file" in one_json_object(done.stdout)["error"]


def test_the_user_config_file_is_found_after_the_directory_walk(tmp_path: Path) -> None:
    user_dir = tmp_path / "xdg" / "subagent-host"
    user_dir.mkdir(parents=True)
    path = write_config(user_dir, {"mine": acp_entry(MOCK_TEXT="user config")})
    path.rename(user_dir / "config.toml")
    done = run_script("run", "x", cwd=tmp_path, env=script_env(tmp_path))
    assert (done.returncode, done.stdout) == (0, b"user config\n")


# 2. One unset ${VAR} blocks every provider --------------------------------------------------------------------


def test_an_unset_variable_fails_only_the_entry_that_needs_it(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        {
            "claude": acp_entry(MOCK_TEXT="claude ok", ANTHROPIC_API_KEY="${ANTHROPIC_API_KEY}"),
            "gemini": acp_entry(GEMINI_API_KEY="${GEMINI_API_KEY}"),
        },
    )
    env = script_env(tmp_path, ANTHROPIC_API_KEY="sk-test")
    env.pop("GEMINI_API_KEY", None)
    ok = run_script("run", "--config", str(config), "--provider", "claude", "x", cwd=tmp_path, env=env)
    assert (ok.returncode, ok.stdout) == (0, b"claude ok\n")
    failed = run_script("run", "--config", str(config), "--provider", "gemini", "x", cwd=tmp_path, env=env)
    assert failed.returncode == 2
    assert "env.GEMINI_API_KEY references unset host variable ${GEMINI_API_KEY}" in failed.stderr.decode()
    listed = run_script("providers", "--config", str(config), "--json", cwd=tmp_path, env=env)
    rows = {row["name"]: row for row in one_json_object(listed.stdout)["providers"]}
    assert rows["gemini"]["needs"] == ["GEMINI_API_KEY"]
    assert "needs" not in rows["claude"]
    assert "sk-test" not in listed.stdout.decode()


# 3. A program that does not speak ACP; no way to raise the log level ------------------------------------------


def test_check_ends_a_silent_program_at_the_handshake_deadline(tmp_path: Path) -> None:
    entry = {**acp_entry(), "args": ["-c", "import time; time.sleep(60)"], "initialize_timeout_ms": 500}
    config = write_config(tmp_path, {"mute": entry})
    done = run_script("check", "--config", str(config), "--json", cwd=tmp_path, env=script_env(tmp_path))
    assert done.returncode == 1
    (report,) = one_json_object(done.stdout)["checks"]
    assert report["ok"] is False
    assert report["diagnostic"] == "Subagent failure (provider: ACP; stage: initialize; category: timeout)"
    assert report["hints"] == ["providers.mute initialize_timeout_ms = 500"]


def test_log_level_debug_logs_a_dropped_non_json_line_truncated(tmp_path: Path) -> None:
    config = operator_config(tmp_path, "noisy")
    done = run_script(
        "run", "--config", str(config), "--log-level", "debug", "x", cwd=tmp_path, env=script_env(tmp_path)
    )
    assert done.returncode == 0
    dropped = [line for line in done.stderr.decode().splitlines() if "not standard JSON" in line]
    assert len(dropped) == 1
    assert "not json yyy" in dropped[0]
    assert "y" * 191 in dropped[0] and "y" * 300 not in dropped[0]
    quiet = run_script("run", "--config", str(config), "x", cwd=tmp_path, env=script_env(tmp_path))
    assert "not standard JSON" not in quiet.stderr.decode()
    by_env = run_script(
        "run", "--config", str(config), "x", cwd=tmp_path, env=script_env(tmp_path, SUBAGENT_HOST_LOG_LEVEL="debug")
    )
    assert "not standard JSON" in by_env.stderr.decode()


def test_a_bad_log_level_variable_fails_only_the_commands_that_take_a_log_level(tmp_path: Path) -> None:
    env = script_env(tmp_path, SUBAGENT_HOST_LOG_LEVEL="bogus")
    refused = run_script("providers", cwd=tmp_path, env=env)
    assert refused.returncode == 2
    assert "SUBAGENT_HOST_LOG_LEVEL must be one of" in refused.stderr.decode()
    listed = run_script("runs", "list", "--state-dir", str(tmp_path / "state"), cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr


def test_json_log_format_writes_one_object_per_line(tmp_path: Path) -> None:
    config = operator_config(tmp_path, "noisy")
    done = run_script(
        "run", "--config", str(config), "--log-level", "debug", "--log-format", "json", "x",
        cwd=tmp_path, env=script_env(tmp_path),
    )  # fmt: skip
    records = [json.loads(line) for line in done.stderr.decode().splitlines() if line.startswith("{")]
    assert any(record["level"] == "debug" and "not standard JSON" in record["message"] for record in records)


# 4. Launch mistakes --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "hint"),
    [
        ("gemini --acp", "hint: command holds spaces; put the arguments in args = [...]"),
        ("definitely-not-installed-agent", 'hint: "definitely-not-installed-agent" was not found on PATH'),
    ],
)
def test_a_launch_mistake_keeps_the_fixed_diagnostic_and_adds_a_hint(tmp_path: Path, command: str, hint: str) -> None:
    config = write_config(tmp_path, {"acp": {**acp_entry(), "command": command, "args": []}})
    done = run_script("run", "--config", str(config), "x", cwd=tmp_path, env=script_env(tmp_path))
    assert done.returncode == 1
    stderr = done.stderr.decode().splitlines()
    assert "subagent-acp: Subagent failure (provider: ACP; stage: process; category: process-start)" in stderr
    assert hint in stderr
    as_json = run_script("run", "--config", str(config), "--json", "x", cwd=tmp_path, env=script_env(tmp_path))
    assert one_json_object(as_json.stdout)["hints"] == [hint.removeprefix("hint: ")]


def test_relative_command_and_cwd_resolve_against_the_config_file(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "bin").mkdir(parents=True)
    (project / "work").mkdir()
    agent = project / "bin" / "agent"
    agent.write_text(f"#!/bin/sh\nexec {acp_entry()['command']} {acp_entry()['args'][0]}\n", encoding="utf-8")
    agent.chmod(0o755)
    entry: dict[str, Any] = {**acp_entry(MOCK_ECHO_CWD="1"), "command": "bin/agent", "args": [], "cwd": "work"}
    config = write_config(project, {"acp": entry})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = run_script("run", "--config", str(config), "x", cwd=elsewhere, env=script_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines()[0] == str(project / "work")


# 5. A permission denial names its fix, and can be overridden per run -------------------------------------------


def test_a_permission_denial_names_the_fix_and_permission_allow_overrides_it(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"claude": acp_entry(MOCK_PERMISSION="1", MOCK_TOOL_KIND="edit")})
    denied = run_script("run", "--config", str(config), "x", cwd=tmp_path, env=script_env(tmp_path))
    assert denied.returncode == 1
    assert (
        'hint: the child asked for "edit" and the policy is reject; set permission = "allow" in [providers.claude] '
        "or pass --permission allow"
    ) in denied.stderr.decode().splitlines()
    allowed = run_script(
        "run", "--config", str(config), "--permission", "allow", "x", cwd=tmp_path, env=script_env(tmp_path)
    )
    assert (allowed.returncode, allowed.stdout) == (0, b"mock child answer\n")


def test_timeout_ms_overrides_the_entry_per_run(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"acp": acp_entry(MOCK_HANG="1", MOCK_TEXT="partial")})
    done = run_script(
        "run", "--config", str(config), "--timeout-ms", "1500", "--json", "x", cwd=tmp_path, env=script_env(tmp_path)
    )
    assert done.returncode == 124
    data = one_json_object(done.stdout)
    assert data["error"] == "tool call timed out after 1500ms"
    assert data["hints"] == ["providers.acp timeout_ms = 1500; raise it or pass --timeout-ms N"]


# 6. The env scrub, and auth-required after it -------------------------------------------------------------------


def test_auth_required_after_the_scrub_names_the_removed_variable_and_the_env_line(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"claude": operator_entry("auth")})
    env = script_env(tmp_path, ANTHROPIC_API_KEY="sk-secret-value")
    done = run_script("run", "--config", str(config), "x", cwd=tmp_path, env=env)
    assert done.returncode == 1
    hints = [line for line in done.stderr.decode().splitlines() if line.startswith("hint: ")]
    assert len(hints) == 1
    assert "ANTHROPIC_API_KEY" in hints[0]
    assert '[providers.claude.env] ANTHROPIC_API_KEY = "${ANTHROPIC_API_KEY}"' in hints[0]
    assert "sk-secret-value" not in done.stderr.decode() + done.stdout.decode()


def test_passwords_credentials_cookies_and_auth_suffixes_are_scrubbed_but_pwd_is_kept(tmp_path: Path) -> None:
    names = ["PASSWD", "MYSQL_PWD", "GOOGLE_APPLICATION_CREDENTIALS", "NPM_CONFIG__AUTH", "SESSION_COOKIE", "PWD"]
    config = write_config(tmp_path, {"op": operator_entry("env", *names)})
    env = script_env(tmp_path, **dict.fromkeys(names, "v"))
    done = run_script("run", "--config", str(config), "x", cwd=tmp_path, env=env)
    assert (done.returncode, done.stdout) == (0, b"present: PWD\n")


def test_inherit_env_minimal_passes_only_the_allowlist_and_the_entry_env(tmp_path: Path) -> None:
    names = ["HOME", "PATH", "LC_ALL", "RANDOM_SETTING", "EXPLICIT"]
    entry = operator_entry("env", *names, inherit_env="minimal", env={"EXPLICIT": "1"})
    config = write_config(tmp_path, {"op": entry})
    env = script_env(tmp_path, RANDOM_SETTING="x", LC_ALL="C.UTF-8")
    done = run_script("run", "--config", str(config), "x", cwd=tmp_path, env=env)
    assert (done.returncode, done.stdout) == (0, b"present: HOME,PATH,LC_ALL,EXPLICIT\n")


# 7. The task from stdin or a file -------------------------------------------------------------------------------


def test_the_task_can_come_from_stdin_or_a_large_file(tmp_path: Path) -> None:
    env = script_env(tmp_path)
    from_stdin = run_script("run", "-", cwd=tmp_path, env=env, stdin=b"from stdin")
    assert (from_stdin.returncode, from_stdin.stdout) == (0, b"from stdin\n")
    big = "t" * 200_000
    (tmp_path / "task.txt").write_text(big, encoding="utf-8")
    from_file = run_script("run", "--json", "--file", str(tmp_path / "task.txt"), cwd=tmp_path, env=env)
    assert from_file.returncode == 0
    assert one_json_object(from_file.stdout)["output"] == [{"type": "text", "text": big}]


@pytest.mark.parametrize(
    ("args", "stdin"),
    [(["   "], None), (["-"], b" \n\t"), (["-"], b"\xff\xfe task"), (["--file", "bad.txt"], None), ([], None)],
    ids=["blank-arg", "blank-stdin", "non-utf8-stdin", "non-utf8-file", "missing"],
)
def test_a_blank_or_non_utf8_task_is_a_usage_error(tmp_path: Path, args: list[str], stdin: bytes | None) -> None:
    (tmp_path / "bad.txt").write_bytes(b"caf\xe9")
    done = run_script("run", "--json", *args, cwd=tmp_path, env=script_env(tmp_path), stdin=stdin)
    assert done.returncode == 2
    assert one_json_object(done.stdout)["error"].startswith("subagent-host: ")


# 8. Log lines never run into streamed text ----------------------------------------------------------------------


def test_a_log_line_never_shares_a_line_with_streamed_text(tmp_path: Path) -> None:
    import subprocess

    from tests.cli._script import SCRIPT

    config = operator_config(tmp_path, "noisy")
    done = subprocess.run(
        [SCRIPT, "run", "--config", str(config), "--log-level", "debug", "x"],
        cwd=tmp_path, env=script_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0
    lines = done.stdout.decode().splitlines()
    assert any(line.startswith("subagent-host: DEBUG") and "not standard JSON" in line for line in lines)
    assert all(line.startswith("subagent-host: ") or "subagent-host:" not in line for line in lines)
    assert "partial text more" in "".join(line for line in lines if not line.startswith("subagent-host: "))


# 9. --version, providers, check --------------------------------------------------------------------------------


def test_version_prints_the_package_version(tmp_path: Path) -> None:
    from importlib.metadata import version

    done = run_script("--version", cwd=tmp_path, env=script_env(tmp_path))
    assert (done.returncode, done.stdout.decode()) == (0, f"subagent-host {version('subagent-host')}\n")
    as_json = run_script("--version", "--json", cwd=tmp_path, env=script_env(tmp_path))
    assert one_json_object(as_json.stdout) == {"version": version("subagent-host")}


def test_providers_lists_name_kind_command_and_source_but_never_env_values(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"acp": acp_entry(SECRET_SETTING="hunter2")})
    done = run_script("providers", "--config", str(config), cwd=tmp_path, env=script_env(tmp_path))
    assert done.returncode == 0
    header, line = done.stdout.decode().splitlines()
    assert header.split() == ["NAME", "KIND", "COMMAND", "SOURCE"]
    assert line.split() == ["acp", "acp", acp_entry()["command"], str(config)]
    assert "hunter2" not in done.stdout.decode() + done.stderr.decode()


def test_check_reports_the_agent_without_a_prompt_and_exits_0_only_if_all_pass(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"good": operator_entry("info"), "auth": operator_entry("auth")})
    both = run_script("check", "--config", str(config), "--json", cwd=tmp_path, env=script_env(tmp_path))
    assert both.returncode == 1
    good, auth = one_json_object(both.stdout)["checks"]
    assert good["ok"] is True
    assert (good["agent_name"], good["agent_version"], good["protocol_version"]) == ("op-agent", "9.9", 1)
    assert good["auth_methods"] == ["login"]
    assert set(good["timings_ms"]) == {"spawn", "initialize", "session/new", "teardown"}
    assert auth["diagnostic"] == "Subagent failure (provider: ACP; stage: new-session; category: auth-required)"
    one = run_script("check", "--config", str(config), "good", cwd=tmp_path, env=script_env(tmp_path))
    assert one.returncode == 0
    assert one.stdout.decode().startswith("ok   good: spawn ")
    unknown = run_script("check", "--config", str(config), "nope", cwd=tmp_path, env=script_env(tmp_path))
    assert unknown.returncode == 2


@pytest.mark.parametrize("command", [[], ["run"], ["providers"], ["check"]])
def test_every_command_has_help(tmp_path: Path, command: list[str]) -> None:
    done = run_script(*command, "--help", cwd=tmp_path, env=script_env(tmp_path))
    assert done.returncode == 0
    assert done.stdout.decode().startswith("usage: subagent-host")


# 11. Unrelated MOCK_* variables do not change the built-in echo --------------------------------------------------


def test_the_built_in_echo_ignores_mock_and_fake_variables(tmp_path: Path) -> None:
    env = script_env(tmp_path, MOCK_SERVER_URL="http://x", MOCK_TEXT="no", FAKE_TEXT="no")
    done = run_script("run", "hello", cwd=tmp_path, env=env)
    assert (done.returncode, done.stdout) == (0, b"hello\n")


def test_check_runs_the_dsh_sdk_initialize(tmp_path: Path) -> None:
    from tests.conftest import FAKE_DSH_RUNTIME, PYTHON

    entry = {"kind": "dsh-sdk", "command": PYTHON, "args": [str(FAKE_DSH_RUNTIME)], "dispose_grace_ms": 300}
    config = write_config(tmp_path, {"sdk": entry})
    done = run_script("check", "--config", str(config), "--json", cwd=tmp_path, env=script_env(tmp_path))
    assert done.returncode == 0, done.stderr
    (report,) = one_json_object(done.stdout)["checks"]
    assert report["ok"] is True and report["kind"] == "dsh-sdk"
    assert set(report["timings_ms"]) == {"spawn", "initialize", "teardown"}
    assert isinstance(report["agent_name"], str) and isinstance(report["agent_version"], str)
