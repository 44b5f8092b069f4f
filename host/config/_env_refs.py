"""``${NAME}`` references in config ``env`` values (docs/behaviour.md#process-environment).

Expansion happens once, at load time, against the unscrubbed host environment. ``$${`` is a literal ``${``; any
other ``$`` is literal. An unset variable raises ``UnsetHostVariableError`` naming it, never a value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from host._exceptions import UnsetHostVariableError

__all__ = ["expand_env_references"]

# One left-to-right scan: an escaped "$${" is consumed before it could start a reference.
_REFERENCE = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_env_references(value: str, environ: Mapping[str, str]) -> str:
    """Replace every ``${NAME}`` in ``value`` with ``environ[NAME]``.

    Args:
        value: A config ``env`` value.
        environ: The unscrubbed host environment.

    Raises:
        UnsetHostVariableError: A reference names a variable missing from ``environ``.
    """

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return "${"
        try:
            return environ[name]
        except KeyError:
            raise UnsetHostVariableError(name) from None

    return _REFERENCE.sub(substitute, value)
