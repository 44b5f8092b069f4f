"""Validation of one ``kind = "acp"`` entry, in docs/behaviour.md#config-acp-entry's order with its exact messages.

The first failing check raises ``ConfigError``; the launch steps come first and the placement steps last, as for
every kind (``_rules.check_launch``, ``_rules.check_placement``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

from host._exceptions import ConfigError
from host.cancel import MAX_TIMER_DELAY_MS
from host.config import _rules
from host.config._models import (
    ACP_INITIALIZE_TIMEOUT_MS,
    DISPOSE_EOF_GRACE_MS,
    DISPOSE_GRACE_MS,
    MAX_OUTPUT_BYTES,
    AcpEntryConfig,
)

__all__ = ["ACP_PREFIX", "validate_acp_entry"]

ACP_PREFIX: Final = "subagent-acp: "

_ACP_KEYS: Final = _rules.SHARED_KEYS | {"permission", "initialize_timeout_ms"}


def validate_acp_entry(
    name: str, table: Mapping[str, object], *, base_dir: str, environ: Mapping[str, str]
) -> AcpEntryConfig:
    """Validate one ACP entry table (``kind`` may be present) into an ``AcpEntryConfig``.

    Args:
        name: The entry's table key under ``[providers]``.
        table: The entry as TOML (or the Python API) gave it.
        base_dir: The config file's directory; a relative ``cwd`` and a ``command`` with a slash resolve against it.
        environ: The unscrubbed host environment for ``${NAME}`` references.

    Raises:
        ConfigError: The first failed check, with the spec's message.
    """
    prefix = ACP_PREFIX
    launch = _rules.check_launch(table, _ACP_KEYS, prefix, environ, base_dir)
    permission = _check_permission(table, prefix)
    limit = MAX_TIMER_DELAY_MS
    eof_grace = _rules.check_positive_ms(table, "dispose_eof_grace_ms", DISPOSE_EOF_GRACE_MS, prefix, limit=limit)
    grace = _rules.check_positive_ms(table, "dispose_grace_ms", DISPOSE_GRACE_MS, prefix, limit=limit)
    initialize_timeout = _rules.check_positive_ms(
        table, "initialize_timeout_ms", ACP_INITIALIZE_TIMEOUT_MS, prefix, limit=limit
    )
    timeout = _rules.check_optional_positive_ms(table, "timeout_ms", prefix, limit=limit)
    max_output = _rules.check_positive_safe_integer(table, "max_output_bytes", prefix)
    placement = _rules.check_placement(table, prefix, base_dir)
    return AcpEntryConfig(
        name=name,
        **launch,
        **placement,
        permission=permission,
        dispose_eof_grace_ms=eof_grace,
        dispose_grace_ms=grace,
        initialize_timeout_ms=initialize_timeout,
        timeout_ms=timeout,
        max_output_bytes=MAX_OUTPUT_BYTES if max_output is None else max_output,
    )


def _check_permission(table: Mapping[str, object], prefix: str) -> Literal["allow", "reject"]:
    """``permission``: ``"allow"`` or ``"reject"`` (the default)."""
    permission = table.get("permission", "reject")
    if permission == "allow":
        return "allow"
    if permission == "reject":
        return "reject"
    raise ConfigError(f'{prefix}permission must be "allow" or "reject"')
