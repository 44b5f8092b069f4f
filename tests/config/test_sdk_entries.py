"""DSH SDK entry validation: docs/behaviour.md#config-dsh-sdk-entry order and messages, docs/behaviour.md#sdk-acceptance
E2–E8."""

from __future__ import annotations

from pathlib import Path

import pytest

from host import ConfigError
from host.config import SdkEntryConfig
from host.config._loader import parse_config
from tests.config._helpers import load_toml

GRACE_KEYS = ["shutdown_timeout_ms", "dispose_eof_grace_ms", "dispose_grace_ms", "initialize_timeout_ms"]


def sdk_entry(tmp_path: Path, extra: str = "", *, environ: dict[str, str] | None = None) -> SdkEntryConfig:
    text = f'[providers.dsh-sdk]\nkind = "dsh-sdk"\ncommand = "dsh-runtime"\n{extra}\n'
    entry = load_toml(tmp_path, text, environ=environ).providers["dsh-sdk"]
    assert isinstance(entry, SdkEntryConfig)
    return entry


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("shutdown_timeout_ms", "0"),
        ("dispose_eof_grace_ms", "-1"),
        ("dispose_grace_ms", "nan"),
        ("initialize_timeout_ms", "inf"),
        ("shutdown_timeout_ms", "true"),
    ],
)
def test_bad_grace_or_bound_fails_as_positive_finite(tmp_path: Path, key: str, value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        sdk_entry(tmp_path, f"{key} = {value}")
    assert str(caught.value) == f"subagent-dsh-sdk: {key} must be a positive finite number"


@pytest.mark.parametrize("key", GRACE_KEYS)
@pytest.mark.parametrize("value", ["0", "-0.5", "nan", "inf", "true", '"1000"'])
def test_every_grace_and_bound_rejects_every_bad_value(tmp_path: Path, key: str, value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        sdk_entry(tmp_path, f"{key} = {value}")
    assert str(caught.value) == f"subagent-dsh-sdk: {key} must be a positive finite number"


@pytest.mark.parametrize("key", GRACE_KEYS)
def test_graces_and_bounds_have_no_timer_ceiling(tmp_path: Path, key: str) -> None:
    entry = sdk_entry(tmp_path, f"{key} = 2147483648.5")
    assert getattr(entry, key) == 2147483648.5


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "4096.0", "nan", "9007199254740992", "true", '"8"'])
def test_max_tokens_outside_the_safe_integers_fails(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        sdk_entry(tmp_path, f"max_tokens = {value}")
    assert str(caught.value) == "subagent-dsh-sdk: max_tokens must be a positive safe integer"


@pytest.mark.parametrize("value", [1, 8192, 2**53 - 1])
def test_max_tokens_in_range_loads(tmp_path: Path, value: int) -> None:
    assert sdk_entry(tmp_path, f"max_tokens = {value}").max_tokens == value


def test_empty_cwd_fails_with_the_em_dash_message(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        sdk_entry(tmp_path, 'cwd = ""')
    assert str(caught.value) == (
        "subagent-dsh-sdk: config cwd must not be empty \u2014 omit the key to inherit the parent session cwd"
    )


def test_nonexistent_cwd_fails_naming_the_absolute_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        sdk_entry(tmp_path, 'cwd = "missing/dir"')
    assert str(caught.value) == f"subagent-dsh-sdk: config cwd is not an accessible directory: {tmp_path}/missing/dir"


def test_non_enterable_cwd_fails(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o600)
    try:
        with pytest.raises(ConfigError) as caught:
            sdk_entry(tmp_path, 'cwd = "locked"')
    finally:
        locked.chmod(0o700)
    assert str(caught.value) == f"subagent-dsh-sdk: config cwd is not an accessible directory: {locked}"


def test_cwd_not_a_string_fails(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        sdk_entry(tmp_path, "cwd = false")
    assert str(caught.value) == "subagent-dsh-sdk: cwd must be a string"


def test_missing_command_fails_as_required() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"providers": {"dsh-sdk": {"kind": "dsh-sdk", "args": []}}}, environ={})
    assert str(caught.value) == "subagent-dsh-sdk: command is required"


def test_empty_command_fails() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"providers": {"dsh-sdk": {"kind": "dsh-sdk", "command": ""}}}, environ={})
    assert str(caught.value) == "subagent-dsh-sdk: command must be a non-empty string"


@pytest.mark.parametrize("key", ["dshHome", "maxTokens", "permission", "dshBin", "profile", "patches"])
def test_reference_and_acp_only_keys_are_unknown(tmp_path: Path, key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        sdk_entry(tmp_path, f'{key} = "x"')
    assert str(caught.value) == f'subagent-dsh-sdk: unknown config key "{key}"'


@pytest.mark.parametrize("value", ["2147483648", "0", "nan", "true"])
def test_timeout_ms_beyond_the_timer_ceiling_fails(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        sdk_entry(tmp_path, f"timeout_ms = {value}")
    assert str(caught.value) == (
        "subagent-dsh-sdk: timeout_ms must be a positive finite number no greater than 2147483647"
    )


@pytest.mark.parametrize("key", ["provider", "model"])
@pytest.mark.parametrize("value", ['""', "1"])
def test_provider_and_model_must_be_non_empty_strings(tmp_path: Path, key: str, value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        sdk_entry(tmp_path, f"{key} = {value}")
    assert str(caught.value) == f"subagent-dsh-sdk: {key} must be a non-empty string"


def test_env_errors_use_the_sdk_prefix(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        sdk_entry(tmp_path, 'env = "x"')
    assert str(caught.value) == "subagent-dsh-sdk: env must be a table of strings"
    with pytest.raises(ConfigError) as caught:
        sdk_entry(tmp_path, "[providers.dsh-sdk.env]\nN = 1\n")
    assert str(caught.value) == "subagent-dsh-sdk: env.N must be a string"
    config = load_toml(
        tmp_path,
        '[providers.dsh-sdk]\nkind = "dsh-sdk"\ncommand = "dsh"\n'
        '[providers.dsh-sdk.env]\nDEEPSEEK_API_KEY = "${DEEPSEEK_API_KEY}"\n',
    )
    with pytest.raises(ConfigError) as caught:
        config.entry("dsh-sdk")
    assert (
        str(caught.value) == "subagent-dsh-sdk: env.DEEPSEEK_API_KEY references unset host variable ${DEEPSEEK_API_KEY}"
    )


def test_non_string_description_fails(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        sdk_entry(tmp_path, "description = []")
    assert str(caught.value) == "subagent-dsh-sdk: description must be a string"


def test_sdk_entry_defaults_match_the_spec(tmp_path: Path) -> None:
    entry = sdk_entry(tmp_path)
    assert entry == SdkEntryConfig(name="dsh-sdk", command="dsh-runtime")
    assert entry.kind == "dsh-sdk"
    assert entry.args == ()
    assert entry.cwd is None
    assert entry.env == {}
    assert entry.provider == "deepseek-official"
    assert entry.model == "deepseek-v4-flash"
    assert entry.max_tokens is None
    assert entry.shutdown_timeout_ms == 1000
    assert entry.dispose_eof_grace_ms == 6000
    assert entry.dispose_grace_ms == 3000
    assert entry.initialize_timeout_ms == 10000
    assert entry.timeout_ms is None
    assert entry.description is None


def test_every_sdk_key_loads_into_the_entry(tmp_path: Path) -> None:
    entry = sdk_entry(
        tmp_path,
        'args = ["/etc/dsh/child-runtime.yml"]\ncwd = "."\nprovider = "fake-provider"\nmodel = "fake-model"\n'
        "max_tokens = 8192\nshutdown_timeout_ms = 250\ndispose_eof_grace_ms = 0.5\ndispose_grace_ms = 200\n"
        'initialize_timeout_ms = 5000\ntimeout_ms = 60000\ndescription = "Runs a DeepSeek child"\n'
        '[providers.dsh-sdk.env]\nDEEPSEEK_API_KEY = "${DEEPSEEK_API_KEY}"\n',
        environ={"DEEPSEEK_API_KEY": "SECRET_TOKEN"},
    )
    assert entry.args == ("/etc/dsh/child-runtime.yml",)
    assert entry.cwd == str(tmp_path)
    assert (entry.provider, entry.model, entry.max_tokens) == ("fake-provider", "fake-model", 8192)
    assert (entry.shutdown_timeout_ms, entry.dispose_eof_grace_ms) == (250, 0.5)
    assert (entry.dispose_grace_ms, entry.initialize_timeout_ms, entry.timeout_ms) == (200, 5000, 60000)
    assert entry.description == "Runs a DeepSeek child"
    assert entry.env == {"DEEPSEEK_API_KEY": "SECRET_TOKEN"}


def test_checks_run_in_the_spec_order(tmp_path: Path) -> None:
    prefix = "subagent-dsh-sdk: "
    steps: list[tuple[str, object, str]] = [
        ("dshHome", "/x", 'unknown config key "dshHome"'),
        ("command", "", "command must be a non-empty string"),
        ("args", [1], "args must be an array of strings"),
        ("env", {"K": 1}, "env.K must be a string"),
        ("provider", "", "provider must be a non-empty string"),
        ("model", "", "model must be a non-empty string"),
        ("shutdown_timeout_ms", 0, "shutdown_timeout_ms must be a positive finite number"),
        ("dispose_eof_grace_ms", 0, "dispose_eof_grace_ms must be a positive finite number"),
        ("dispose_grace_ms", 0, "dispose_grace_ms must be a positive finite number"),
        ("initialize_timeout_ms", 0, "initialize_timeout_ms must be a positive finite number"),
        ("timeout_ms", 0, "timeout_ms must be a positive finite number no greater than 2147483647"),
        ("max_tokens", 0, "max_tokens must be a positive safe integer"),
        ("cwd", "", "config cwd must not be empty \u2014 omit the key to inherit the parent session cwd"),
        ("description", 1, "description must be a string"),
    ]
    for index, (_, _, expected) in enumerate(steps):
        table: dict[str, object] = {"kind": "dsh-sdk", "command": "dsh-runtime"}
        table.update({key: value for key, value, _ in steps[index:]})
        with pytest.raises(ConfigError) as caught:
            parse_config({"providers": {"dsh-sdk": table}}, base_dir=str(tmp_path), environ={})
        assert str(caught.value) == prefix + expected


def test_entry_name_with_a_dash_keeps_its_name(tmp_path: Path) -> None:
    config = load_toml(tmp_path, '[providers.sdk-hmr]\nkind = "dsh-sdk"\ncommand = "dsh-runtime"\n')
    assert config.providers["sdk-hmr"].name == "sdk-hmr"
    assert config.providers["sdk-hmr"].kind == "dsh-sdk"
