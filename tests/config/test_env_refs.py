"""``${NAME}`` expansion (docs/behaviour.md#process-environment): references, the ``$${`` escape, literal ``$``, unset
names."""

from __future__ import annotations

import pytest

from host import ConfigError
from host._exceptions import UnsetHostVariableError
from host.config._env_refs import expand_env_references

ENVIRON = {"HOME": "/private/path", "A_1": "one", "_U": "under", "EMPTY": ""}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("${HOME}", "/private/path"),
        ("pre-${A_1}-${_U}-post", "pre-one-under-post"),
        ("${EMPTY}", ""),
        ("cost $${HOME} $5", "cost ${HOME} $5"),
        ("$$${HOME}", "$${HOME}"),
        ("$HOME", "$HOME"),
        ("$", "$"),
        ("${", "${"),
        ("${HOME", "${HOME"),
        ("${1ABC}", "${1ABC}"),
        ("${A-B}", "${A-B}"),
        ("${}", "${}"),
        ("$$", "$$"),
        ("no references", "no references"),
    ],
)
def test_references_expand_and_every_other_dollar_is_literal(value: str, expected: str) -> None:
    assert expand_env_references(value, ENVIRON) == expected


def test_expanded_values_are_not_expanded_again() -> None:
    assert expand_env_references("${NESTED}", {"NESTED": "${HOME}", "HOME": "x"}) == "${HOME}"


def test_unset_reference_raises_naming_the_variable_never_a_value() -> None:
    with pytest.raises(UnsetHostVariableError) as caught:
        expand_env_references("${HOME} ${NOPE_UNSET_VAR}", ENVIRON)
    assert caught.value.name == "NOPE_UNSET_VAR"
    assert isinstance(caught.value, ConfigError)
    assert "/private/path" not in str(caught.value)


def test_escaped_reference_to_an_unset_variable_is_not_an_error() -> None:
    assert expand_env_references("$${NOPE_UNSET_VAR}", {}) == "${NOPE_UNSET_VAR}"
