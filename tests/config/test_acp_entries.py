"""ACP entry validation: docs/behaviour.md#config-acp-entry order and messages, docs/behaviour.md#acp-acceptance
scenarios 7–13 and 18–20."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from host import ConfigError
from host.config import AcpEntryConfig
from host.config._loader import parse_config
from tests.config._helpers import load_toml

TIMER_KEYS = ["dispose_eof_grace_ms", "dispose_grace_ms", "timeout_ms"]


def acp_entry(tmp_path: Path, extra: str = "", *, environ: dict[str, str] | None = None) -> AcpEntryConfig:
    config = load_toml(tmp_path, f'[providers.acp]\nkind = "acp"\ncommand = "agent"\n{extra}\n', environ=environ)
    entry = config.providers["acp"]
    assert isinstance(entry, AcpEntryConfig)
    return entry


@pytest.mark.parametrize("key", TIMER_KEYS)
@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "-inf", "2147483648", "true", '"100"'])
def test_timer_key_out_of_range_or_not_a_number_fails_to_load(tmp_path: Path, key: str, value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        acp_entry(tmp_path, f"{key} = {value}")
    assert str(caught.value) == f"subagent-acp: {key} must be a positive finite number no greater than 2147483647"


@pytest.mark.parametrize("key", TIMER_KEYS)
@pytest.mark.parametrize(("value", "expected"), [("2147483647", 2147483647.0), ("0.5", 0.5)])
def test_timer_key_at_the_bound_or_fractional_loads(tmp_path: Path, key: str, value: str, expected: float) -> None:
    entry = acp_entry(tmp_path, f"{key} = {value}")
    assert getattr(entry, key) == expected


def test_acp_entry_defaults_match_the_spec(tmp_path: Path) -> None:
    entry = acp_entry(tmp_path)
    assert entry == AcpEntryConfig(name="acp", command="agent")
    assert entry.kind == "acp"
    assert entry.args == ()
    assert entry.cwd is None
    assert entry.env == {}
    assert entry.permission == "reject"
    assert entry.dispose_eof_grace_ms == 6000
    assert entry.dispose_grace_ms == 3000
    assert entry.timeout_ms is None
    assert entry.description is None


def test_every_acp_key_loads_into_the_entry(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    entry = acp_entry(
        tmp_path,
        'args = ["--stdio", "-v"]\ncwd = "workspace"\npermission = "allow"\ndispose_eof_grace_ms = 100\n'
        'dispose_grace_ms = 50.5\ntimeout_ms = 600000\ndescription = "Reviews diffs"\n'
        '[providers.acp.env]\nMY_AGENT_API_KEY = "${MY_AGENT_API_KEY}"\nPLAIN = "value"\n',
        environ={"MY_AGENT_API_KEY": "SECRET_TOKEN"},
    )
    assert entry.args == ("--stdio", "-v")
    assert entry.cwd == str(workspace)
    assert entry.permission == "allow"
    assert entry.dispose_eof_grace_ms == 100
    assert entry.dispose_grace_ms == 50.5
    assert entry.timeout_ms == 600000
    assert entry.description == "Reviews diffs"
    assert entry.env == {"MY_AGENT_API_KEY": "SECRET_TOKEN", "PLAIN": "value"}


def test_empty_cwd_fails_with_the_em_dash_message(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        acp_entry(tmp_path, 'cwd = ""')
    assert str(caught.value) == (
        "subagent-acp: config cwd must not be empty \u2014 omit the key to inherit the parent session cwd"
    )


def test_cwd_without_search_permission_fails_even_as_root(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o600)
    try:
        with pytest.raises(ConfigError) as caught:
            acp_entry(tmp_path, f'cwd = "{locked}"')
    finally:
        locked.chmod(0o700)
    assert str(caught.value) == f"subagent-acp: config cwd is not an accessible directory: {locked}"


def test_nonexistent_cwd_fails_naming_the_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        acp_entry(tmp_path, 'cwd = "/nonexistent/acp-child-workspace"')
    assert str(caught.value) == (
        "subagent-acp: config cwd is not an accessible directory: /nonexistent/acp-child-workspace"
    )


def test_cwd_naming_a_file_is_not_an_accessible_directory(tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(ConfigError) as caught:
        acp_entry(tmp_path, 'cwd = "file.txt"')
    assert str(caught.value) == f"subagent-acp: config cwd is not an accessible directory: {tmp_path / 'file.txt'}"


def test_relative_cwd_resolves_lexically_against_the_load_time_working_directory(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    entry = acp_entry(tmp_path, 'cwd = "./link/../link"')
    # abspath, not realpath: the symlink stays in the path.
    assert entry.cwd == str(tmp_path / "link")


def test_cwd_not_a_string_fails(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        acp_entry(tmp_path, "cwd = 7")
    assert str(caught.value) == "subagent-acp: cwd must be a string"


def test_camel_case_key_is_an_unknown_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        acp_entry(tmp_path, "disposeGraceMs = 100")
    assert str(caught.value) == 'subagent-acp: unknown config key "disposeGraceMs"'


def test_missing_command_fails_as_required() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"providers": {"acp": {"kind": "acp"}}}, environ={})
    assert str(caught.value) == "subagent-acp: command is required"


@pytest.mark.parametrize("command", ["", 7, ["agent"]])
def test_empty_or_non_string_command_fails(command: object) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"providers": {"acp": {"kind": "acp", "command": command}}}, environ={})
    assert str(caught.value) == "subagent-acp: command must be a non-empty string"


@pytest.mark.parametrize("args", ["--stdio", ["--stdio", 1], {"a": "b"}])
def test_args_that_are_not_an_array_of_strings_fail(args: object) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"providers": {"acp": {"kind": "acp", "command": "agent", "args": args}}}, environ={})
    assert str(caught.value) == "subagent-acp: args must be an array of strings"


def test_permission_outside_the_closed_set_fails(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        acp_entry(tmp_path, 'permission = "ask"')
    assert str(caught.value) == 'subagent-acp: permission must be "allow" or "reject"'


def test_env_that_is_not_a_table_fails(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        acp_entry(tmp_path, 'env = ["A=1"]')
    assert str(caught.value) == "subagent-acp: env must be a table of strings"


def test_env_value_that_is_not_a_string_fails_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        acp_entry(tmp_path, "[providers.acp.env]\nPORT = 8080\n")
    assert str(caught.value) == "subagent-acp: env.PORT must be a string"


def test_reference_to_an_unset_host_variable_fails_only_that_entry_when_used(tmp_path: Path) -> None:
    config = load_toml(
        tmp_path,
        '[providers.acp]\nkind = "acp"\ncommand = "agent"\n[providers.acp.env]\nX = "${NOPE_UNSET_VAR}"\n'
        '[providers.other]\nkind = "acp"\ncommand = "agent"\n',
        environ={"OTHER": "SECRET_TOKEN"},
    )
    assert list(config.providers) == ["other"]
    assert config.unresolved["acp"].missing == ("NOPE_UNSET_VAR",)
    with pytest.raises(ConfigError) as caught:
        config.entry("acp")
    assert str(caught.value) == "subagent-acp: env.X references unset host variable ${NOPE_UNSET_VAR}"
    assert (caught.value.provider, caught.value.source) == ("acp", str(tmp_path / "config.toml"))


def test_env_references_expand_against_the_unscrubbed_host_environment(tmp_path: Path) -> None:
    entry = acp_entry(
        tmp_path,
        '[providers.acp.env]\nFORWARDED = "${HOST_SECRET_TOKEN}"\nMOCK_TEXT = "cost $${HOME} $5"\n',
        environ={"HOST_SECRET_TOKEN": "abc", "HOME": "/private/path"},
    )
    assert entry.env == {"FORWARDED": "abc", "MOCK_TEXT": "cost ${HOME} $5"}


def test_env_references_default_to_the_process_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONFIG_TEST_FORWARDED_VAR", "from-os-environ")
    document = {"providers": {"acp": {"kind": "acp", "command": "agent", "env": {"V": "${CONFIG_TEST_FORWARDED_VAR}"}}}}
    entry = parse_config(document, base_dir=str(tmp_path)).providers["acp"]
    assert entry.env == {"V": "from-os-environ"}


def test_non_string_description_fails(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        acp_entry(tmp_path, "description = 3")
    assert str(caught.value) == "subagent-acp: description must be a string"


def test_checks_run_in_the_spec_order(tmp_path: Path) -> None:
    # Every later check would fail too; only the first in docs/behaviour.md#config-acp-entry's order is reported.
    steps = [
        ("unknownKey", 1, 'subagent-acp: unknown config key "unknownKey"'),
        ("command", "", "subagent-acp: command must be a non-empty string"),
        ("args", "x", "subagent-acp: args must be an array of strings"),
        ("env", {"X": 1}, "subagent-acp: env.X must be a string"),
        ("permission", "ask", 'subagent-acp: permission must be "allow" or "reject"'),
        (
            "dispose_eof_grace_ms",
            0,
            "subagent-acp: dispose_eof_grace_ms must be a positive finite number no greater than 2147483647",
        ),
        (
            "dispose_grace_ms",
            0,
            "subagent-acp: dispose_grace_ms must be a positive finite number no greater than 2147483647",
        ),
        ("timeout_ms", 0, "subagent-acp: timeout_ms must be a positive finite number no greater than 2147483647"),
        ("cwd", "", "subagent-acp: config cwd must not be empty \u2014 omit the key to inherit the parent session cwd"),
        ("description", 1, "subagent-acp: description must be a string"),
    ]
    for index, (_, _, expected) in enumerate(steps):
        table: dict[str, object] = {"kind": "acp", "command": "agent"}
        table.update({key: value for key, value, _ in steps[index:]})
        with pytest.raises(ConfigError) as caught:
            parse_config({"providers": {"acp": table}}, base_dir=str(tmp_path), environ={})
        assert str(caught.value) == expected


def test_entry_named_acp_loads_under_its_table_key(tmp_path: Path) -> None:
    config = load_toml(tmp_path, '[providers.acp]\nkind = "acp"\ncommand = "agent"\n')
    assert list(config.providers) == ["acp"]
    assert config.providers["acp"].name == "acp"
    assert config.providers["acp"].kind == "acp"


def test_unknown_kind_fails_naming_the_entry(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_toml(tmp_path, '[providers.acp]\nkind = "other"\ncommand = "agent"\n')
    assert str(caught.value) == 'subagent-host: providers.acp.kind must be "acp" or "dsh-sdk"'


def test_missing_kind_fails_like_an_unknown_kind() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"providers": {"acp": {"command": "agent"}}}, environ={})
    assert str(caught.value) == 'subagent-host: providers.acp.kind must be "acp" or "dsh-sdk"'


def test_entry_models_are_frozen(tmp_path: Path) -> None:
    entry = acp_entry(tmp_path)
    field = "command"
    with pytest.raises(ValidationError):
        setattr(entry, field, "other")
    assert entry.command == "agent"
