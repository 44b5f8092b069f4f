"""Config lookup order, the built-in default, TOML reading errors and the host-level (``subagent-host:``) errors."""

from __future__ import annotations

import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import cast

import pytest

from host import ConfigError
from host.config import AcpEntryConfig, load_config
from host.config._loader import BUILTIN_DESCRIPTION, BUILTIN_SOURCE, builtin_config, parse_config
from tests.config._helpers import load_toml
from tests.conftest import ECHO_AGENT


def write_config(path: Path, name: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'[providers.{name}]\nkind = "acp"\ncommand = "agent"\n', encoding="utf-8")
    return path


def test_explicit_path_wins_over_the_variable_and_the_working_directory_file(tmp_path: Path) -> None:
    explicit = write_config(tmp_path / "explicit.toml", "explicit")
    from_env = write_config(tmp_path / "env.toml", "from-env")
    write_config(tmp_path / "subagent-host.toml", "local")
    config = load_config(explicit, cwd=str(tmp_path), environ={"SUBAGENT_HOST_CONFIG": str(from_env)})
    assert list(config.providers) == ["explicit"]
    assert config.source == str(explicit)


def test_variable_wins_over_the_working_directory_file(tmp_path: Path) -> None:
    from_env = write_config(tmp_path / "env.toml", "from-env")
    write_config(tmp_path / "subagent-host.toml", "local")
    config = load_config(cwd=str(tmp_path), environ={"SUBAGENT_HOST_CONFIG": str(from_env)})
    assert list(config.providers) == ["from-env"]
    assert config.source == str(from_env)


def test_working_directory_file_wins_over_the_built_in_default(tmp_path: Path) -> None:
    local = write_config(tmp_path / "subagent-host.toml", "local")
    config = load_config(cwd=str(tmp_path), environ={})
    assert list(config.providers) == ["local"]
    assert config.source == str(local)


def test_empty_variable_is_treated_as_unset(tmp_path: Path) -> None:
    write_config(tmp_path / "subagent-host.toml", "local")
    config = load_config(cwd=str(tmp_path), environ={"SUBAGENT_HOST_CONFIG": ""})
    assert list(config.providers) == ["local"]


def test_relative_explicit_path_and_variable_resolve_against_the_working_directory(tmp_path: Path) -> None:
    write_config(tmp_path / "conf" / "a.toml", "a")
    write_config(tmp_path / "conf" / "b.toml", "b")
    by_path = load_config("conf/a.toml", cwd=str(tmp_path), environ={})
    by_env = load_config(cwd=str(tmp_path), environ={"SUBAGENT_HOST_CONFIG": "conf/b.toml"})
    assert (list(by_path.providers), by_path.source) == (["a"], str(tmp_path / "conf" / "a.toml"))
    assert (list(by_env.providers), by_env.source) == (["b"], str(tmp_path / "conf" / "b.toml"))


def test_defaults_read_the_process_environment_and_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SUBAGENT_HOST_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    assert load_config().source == BUILTIN_SOURCE
    write_config(tmp_path / "subagent-host.toml", "local")
    assert list(load_config().providers) == ["local"]
    monkeypatch.setenv("SUBAGENT_HOST_CONFIG", str(write_config(tmp_path / "env.toml", "from-env")))
    assert list(load_config().providers) == ["from-env"]


def test_without_any_config_file_the_built_in_echo_entry_loads(tmp_path: Path) -> None:
    config = load_config(cwd=str(tmp_path), environ={})
    assert config.providers == builtin_config().providers
    assert config.source == "<built-in>"
    assert list(config.providers) == ["echo"]
    echo = config.providers["echo"]
    assert echo == AcpEntryConfig(
        name="echo",
        command=sys.executable,
        args=("-I", "-S", str(ECHO_AGENT)),
        description="Built-in echo ACP agent (answers with the task text); for trying subagent-host out",
    )
    assert echo.description == BUILTIN_DESCRIPTION
    assert echo.kind == "acp"
    assert echo.cwd is None
    assert echo.permission == "reject"


def test_missing_explicit_file_fails_instead_of_falling_back(tmp_path: Path) -> None:
    missing = tmp_path / "missing.toml"
    with pytest.raises(ConfigError) as caught:
        load_config(missing, cwd=str(tmp_path), environ={})
    assert str(caught.value) == f"subagent-host: cannot read config file {missing}: No such file or directory"
    assert isinstance(caught.value.__cause__, FileNotFoundError)


def test_missing_file_named_by_the_variable_fails(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(cwd=str(tmp_path), environ={"SUBAGENT_HOST_CONFIG": "nope.toml"})
    assert (
        str(caught.value)
        == f"subagent-host: cannot read config file {tmp_path / 'nope.toml'}: No such file or directory"
    )


def test_working_directory_config_that_is_a_directory_is_unreadable(tmp_path: Path) -> None:
    (tmp_path / "subagent-host.toml").mkdir()
    with pytest.raises(ConfigError) as caught:
        load_config(cwd=str(tmp_path), environ={})
    assert str(caught.value) == (
        f"subagent-host: cannot read config file {tmp_path / 'subagent-host.toml'}: Is a directory"
    )


def test_invalid_toml_fails_with_the_parser_message(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    with pytest.raises(ConfigError) as caught:
        load_toml(tmp_path, "[providers.acp\nkind = 'acp'\n")
    assert str(caught.value).startswith(f"subagent-host: {path} is not valid TOML: ")
    assert str(caught.value) == f"subagent-host: {path} is not valid TOML: {caught.value.__cause__}"


def test_file_that_is_not_utf8_is_not_valid_toml(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_bytes(b'[providers.acp]\nkind = "\xff"\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path, cwd=str(tmp_path), environ={})
    assert str(caught.value).startswith(f"subagent-host: {path} is not valid TOML: ")


def test_empty_file_configures_no_providers(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_toml(tmp_path, "")
    assert str(caught.value) == f"subagent-host: {tmp_path / 'config.toml'} configures no providers"


def test_empty_providers_table_configures_no_providers(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_toml(tmp_path, "[providers]\n")
    assert str(caught.value) == f"subagent-host: {tmp_path / 'config.toml'} configures no providers"


def test_unknown_top_level_key_fails(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_toml(tmp_path, 'provider = "acp"\n[providers.acp]\nkind = "acp"\ncommand = "agent"\n')
    assert str(caught.value) == 'subagent-host: unknown top-level config key "provider"'


def test_providers_that_is_not_a_table_fails(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_toml(tmp_path, 'providers = ["acp"]\n')
    assert str(caught.value) == "subagent-host: providers must be a table"


def test_entry_that_is_not_a_table_fails(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_toml(tmp_path, '[providers]\nacp = "agent"\n')
    assert str(caught.value) == "subagent-host: providers.acp must be a table"


def test_providers_keep_document_order_and_mix_kinds(tmp_path: Path) -> None:
    config = load_toml(
        tmp_path,
        '[providers.zeta]\nkind = "dsh-sdk"\ncommand = "dsh"\n'
        '[providers.alpha]\nkind = "acp"\ncommand = "agent"\n'
        '[providers.mid]\nkind = "acp"\ncommand = "agent2"\n',
    )
    assert list(config.providers) == ["zeta", "alpha", "mid"]
    assert [entry.kind for entry in config.providers.values()] == ["dsh-sdk", "acp", "acp"]


def test_first_invalid_entry_stops_loading(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_toml(
            tmp_path,
            '[providers.good]\nkind = "acp"\ncommand = "agent"\n[providers.bad]\nkind = "acp"\n'
            '[providers.worse]\nkind = "nope"\n',
        )
    assert str(caught.value) == "subagent-acp: command is required"


def test_providers_mapping_is_read_only(tmp_path: Path) -> None:
    config = load_toml(tmp_path, '[providers.acp]\nkind = "acp"\ncommand = "agent"\n')
    smuggled = cast("MutableMapping[str, object]", config.providers)
    with pytest.raises(TypeError):
        smuggled["other"] = config.providers["acp"]
    assert list(config.providers) == ["acp"]


def test_parse_config_names_its_source_in_errors_and_result(tmp_path: Path) -> None:
    document = {"providers": {"acp": {"kind": "acp", "command": "agent"}}}
    assert parse_config(document, source="inline", base_dir=str(tmp_path), environ={}).source == "inline"
    with pytest.raises(ConfigError) as caught:
        parse_config({}, source="inline", environ={})
    assert str(caught.value) == "subagent-host: inline configures no providers"


def test_relative_entry_cwd_and_command_resolve_against_the_file_directory_not_the_load_cwd(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    config_dir = tmp_path / "configs"
    (config_dir / "work").mkdir(parents=True)
    path = config_dir / "c.toml"
    path.write_text(
        '[providers.acp]\nkind = "acp"\ncommand = "bin/agent"\ncwd = "work"\n'
        '[providers.bare]\nkind = "acp"\ncommand = "agent"\n',
        encoding="utf-8",
    )
    config = load_config(path, cwd=str(tmp_path / "elsewhere"), environ={})
    assert config.providers["acp"].cwd == str(config_dir / "work")
    assert config.providers["acp"].command == str(config_dir / "bin" / "agent")
    assert config.providers["bare"].command == "agent"


def test_the_lookup_walks_up_the_parent_directories(tmp_path: Path) -> None:
    top = write_config(tmp_path / "subagent-host.toml", "top")
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    config = load_config(cwd=str(deep), environ={})
    assert (list(config.providers), config.source) == (["top"], str(top))


def test_the_user_config_file_comes_after_the_walk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    user = write_config(tmp_path / "xdg" / "subagent-host" / "config.toml", "user")
    (tmp_path / "work").mkdir()
    assert load_config(cwd=str(tmp_path / "work"), environ={}).source == str(user)
    user.unlink()
    config = load_config(cwd=str(tmp_path / "work"), environ={})
    assert config.source == BUILTIN_SOURCE
    assert config.searched[-1] == str(user)


def test_entries_whose_delegation_tool_names_collide_are_rejected_naming_both() -> None:
    document = {"providers": {"a-b": {"kind": "acp", "command": "x"}, "a_b": {"kind": "acp", "command": "y"}}}
    with pytest.raises(ConfigError) as caught:
        parse_config(document)
    assert str(caught.value) == (
        'subagent-host: providers.a-b and providers.a_b would both register the tool "delegate_a_b"'
    )


def test_an_entry_error_keeps_the_spec_text_and_carries_the_entry_and_source() -> None:
    document = {"providers": {"good": {"kind": "acp", "command": "x"}, "bad": {"kind": "acp", "command": ""}}}
    with pytest.raises(ConfigError) as caught:
        parse_config(document, source="/etc/agents.toml")
    assert str(caught.value) == "subagent-acp: command must be a non-empty string"
    assert (caught.value.provider, caught.value.source) == ("bad", "/etc/agents.toml")


_ONE_PROVIDER: dict[str, object] = {"a": {"kind": "acp", "command": "agent"}}


def test_the_host_table_bounds_finished_jobs_with_defaults_256_and_64_mib() -> None:
    default = parse_config({"providers": _ONE_PROVIDER})
    assert (default.max_finished_jobs, default.max_finished_job_output_bytes) == (256, 64 * 1024 * 1024)
    host_table: dict[str, object] = {"max_finished_jobs": 3, "max_finished_job_output_bytes": 1024}
    configured = parse_config({"providers": _ONE_PROVIDER, "host": host_table})
    assert (configured.max_finished_jobs, configured.max_finished_job_output_bytes) == (3, 1024)


def test_the_host_table_limits_live_runs_with_default_8() -> None:
    assert parse_config({"providers": _ONE_PROVIDER}).max_concurrent_runs == 8
    configured = parse_config({"providers": _ONE_PROVIDER, "host": {"max_concurrent_runs": 2}})
    assert configured.max_concurrent_runs == 2


@pytest.mark.parametrize("key", ["max_finished_jobs", "max_finished_job_output_bytes", "max_concurrent_runs"])
@pytest.mark.parametrize("bad", [0, -1, 1.0, True, "8", 2**53])
def test_a_finished_job_bound_must_be_a_positive_safe_integer(key: str, bad: object) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"providers": _ONE_PROVIDER, "host": {key: bad}})
    assert str(caught.value) == f"subagent-host: host.{key} must be a positive safe integer"
