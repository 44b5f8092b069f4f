"""Validation of one ``kind = "dsh-sdk"`` entry, in docs/behaviour.md#config-dsh-sdk-entry's order with its exact
messages.

The route, the protocol bounds and the graces sit between the launch and placement steps every kind shares.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from host.cancel import MAX_TIMER_DELAY_MS
from host.config import _rules
from host.config._models import (
    DISPOSE_EOF_GRACE_MS,
    DISPOSE_GRACE_MS,
    INITIALIZE_TIMEOUT_MS,
    MAX_OUTPUT_BYTES,
    SDK_MODEL,
    SDK_PROVIDER,
    SHUTDOWN_TIMEOUT_MS,
    SdkEntryConfig,
)

__all__ = ["SDK_PREFIX", "validate_sdk_entry"]

SDK_PREFIX: Final = "subagent-dsh-sdk: "

_SDK_KEYS: Final = _rules.SHARED_KEYS | {
    "provider",
    "model",
    "max_tokens",
    "shutdown_timeout_ms",
    "initialize_timeout_ms",
}

# The protocol bounds and ladder graces, checked in this order (docs/behaviour.md#config-dsh-sdk-entry step 6).
_GRACE_DEFAULTS: Final = (
    ("shutdown_timeout_ms", SHUTDOWN_TIMEOUT_MS),
    ("dispose_eof_grace_ms", DISPOSE_EOF_GRACE_MS),
    ("dispose_grace_ms", DISPOSE_GRACE_MS),
    ("initialize_timeout_ms", INITIALIZE_TIMEOUT_MS),
)


def validate_sdk_entry(
    name: str, table: Mapping[str, object], *, base_dir: str, environ: Mapping[str, str]
) -> SdkEntryConfig:
    """Validate one DSH SDK entry table into an ``SdkEntryConfig``; arguments as for ``validate_acp_entry``.

    Raises:
        ConfigError: The first failed check, with the spec's message.
    """
    prefix = SDK_PREFIX
    launch = _rules.check_launch(table, _SDK_KEYS, prefix, environ, base_dir)
    provider = _rules.check_non_empty_string(table, "provider", SDK_PROVIDER, prefix)
    model = _rules.check_non_empty_string(table, "model", SDK_MODEL, prefix)
    graces = {
        key: _rules.check_positive_ms(table, key, default, prefix, limit=None) for key, default in _GRACE_DEFAULTS
    }
    timeout = _rules.check_optional_positive_ms(table, "timeout_ms", prefix, limit=MAX_TIMER_DELAY_MS)
    max_tokens = _rules.check_positive_safe_integer(table, "max_tokens", prefix)
    max_output = _rules.check_positive_safe_integer(table, "max_output_bytes", prefix)
    placement = _rules.check_placement(table, prefix, base_dir)
    return SdkEntryConfig(
        name=name,
        **launch,
        **placement,
        provider=provider,
        model=model,
        max_tokens=max_tokens,
        shutdown_timeout_ms=graces["shutdown_timeout_ms"],
        dispose_eof_grace_ms=graces["dispose_eof_grace_ms"],
        dispose_grace_ms=graces["dispose_grace_ms"],
        initialize_timeout_ms=graces["initialize_timeout_ms"],
        timeout_ms=timeout,
        max_output_bytes=MAX_OUTPUT_BYTES if max_output is None else max_output,
    )
