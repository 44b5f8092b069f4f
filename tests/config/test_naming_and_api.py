"""``delegation_tool_name`` (docs/behaviour.md#results-foreground-tool), the ``description`` key, and the package's
public names."""

from __future__ import annotations

from pathlib import Path

import pytest

from host.config import delegation_tool_name
from host.config._lookup import CONFIG_ENV_VAR, DEFAULT_CONFIG_FILENAME
from tests.config._helpers import load_toml


@pytest.mark.parametrize(
    ("entry_name", "tool_name"),
    [
        ("acp", "delegate_acp"),
        ("dsh-sdk", "delegate_dsh_sdk"),
        ("sdk-hmr", "delegate_sdk_hmr"),
        ("Mixed_Case9", "delegate_Mixed_Case9"),
        ("a.b c/d", "delegate_a_b_c_d"),
        ("caf\u00e9", "delegate_caf_"),
        ("", "delegate_"),
    ],
)
def test_delegation_tool_name_replaces_every_character_outside_the_identifier_set(
    entry_name: str, tool_name: str
) -> None:
    assert delegation_tool_name(entry_name) == tool_name


def test_description_is_kept_verbatim_for_both_kinds(tmp_path: Path) -> None:
    config = load_toml(
        tmp_path,
        '[providers.acp]\nkind = "acp"\ncommand = "agent"\ndescription = "Reviews a diff; answers in prose"\n'
        '[providers.dsh-sdk]\nkind = "dsh-sdk"\ncommand = "dsh"\ndescription = ""\n',
    )
    assert config.providers["acp"].description == "Reviews a diff; answers in prose"
    assert config.providers["dsh-sdk"].description == ""


def test_the_config_file_names_are_the_documented_ones() -> None:
    assert CONFIG_ENV_VAR == "SUBAGENT_HOST_CONFIG"
    assert DEFAULT_CONFIG_FILENAME == "subagent-host.toml"
