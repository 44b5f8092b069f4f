"""Entry configuration as the provider sees it (docs/behaviour.md#sdk-acceptance group E) and the package's public
surface."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from host._exceptions import ConfigError
from host.config import SdkEntryConfig
from host.config._loader import parse_config
from host.sdk_provider._provider import spec_of_entry

PREFIX = "subagent-dsh-sdk: "


def _load(tmp_path: Path, **keys: object) -> SdkEntryConfig:
    table: dict[str, object] = {"kind": "dsh-sdk", "command": "dsh-runtime", **keys}
    entry = parse_config({"providers": {"sdk-hmr": table}}, base_dir=str(tmp_path), environ={}).providers["sdk-hmr"]
    assert isinstance(entry, SdkEntryConfig)
    return entry


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("shutdown_timeout_ms", 0),
        ("dispose_eof_grace_ms", -1),
        ("dispose_grace_ms", math.nan),
        ("initialize_timeout_ms", math.inf),
        ("shutdown_timeout_ms", True),
    ],
)
def test_bounds_must_be_positive_finite_numbers(tmp_path: Path, key: str, value: object) -> None:
    with pytest.raises(ConfigError, match=f"^{PREFIX}{key} must be a positive finite number$"):
        _load(tmp_path, **{key: value})


@pytest.mark.parametrize("value", [0, -1, 1.5, math.nan, 9007199254740992, True])
def test_max_tokens_must_be_a_positive_safe_integer(tmp_path: Path, value: object) -> None:
    with pytest.raises(ConfigError, match=f"^{PREFIX}max_tokens must be a positive safe integer$"):
        _load(tmp_path, max_tokens=value)


@pytest.mark.parametrize("key", ["dshHome", "maxTokens", "permission"])
def test_reference_and_foreign_keys_are_unknown(tmp_path: Path, key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, **{key: "x"})
    assert str(caught.value) == f'{PREFIX}unknown config key "{key}"'


def test_cwd_command_and_timeout_messages(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as empty:
        _load(tmp_path, cwd="")
    assert str(empty.value) == (
        f"{PREFIX}config cwd must not be empty — omit the key to inherit the parent session cwd"
    )
    with pytest.raises(ConfigError) as missing:
        _load(tmp_path, cwd="missing")
    assert str(missing.value) == f"{PREFIX}config cwd is not an accessible directory: {tmp_path / 'missing'}"
    with pytest.raises(
        ConfigError, match=f"^{PREFIX}timeout_ms must be a positive finite number no greater than 2147483647$"
    ):
        _load(tmp_path, timeout_ms=2147483648)
    with pytest.raises(ConfigError) as no_command:
        parse_config({"providers": {"x": {"kind": "dsh-sdk"}}}, base_dir=str(tmp_path), environ={})
    assert str(no_command.value) == f"{PREFIX}command is required"


def test_an_entry_becomes_a_spec_with_its_route_and_bounds(tmp_path: Path) -> None:
    entry = _load(tmp_path, args=["/etc/dsh.yml"], max_tokens=8192, shutdown_timeout_ms=5, env={"A": "b"})
    spec = spec_of_entry(entry, str(tmp_path))
    assert (spec.command, spec.args, spec.cwd, dict(spec.env)) == (
        "dsh-runtime",
        ("/etc/dsh.yml",),
        str(tmp_path),
        {"A": "b"},
    )
    assert (spec.provider, spec.model, spec.max_tokens, spec.reasoning_effort) == (
        "deepseek-official",
        "deepseek-v4-flash",
        8192,
        None,
    )
    assert (spec.shutdown_timeout_ms, spec.initialize_timeout_ms) == (5, 10000)
