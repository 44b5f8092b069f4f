"""JSON type aliases, the largest exact JSON integer and JSON-style millisecond formatting, shared across the host.

``JsonValue`` is *read-only* JSON: pyright rejects mutation through it, which is how snapshots handed to tool
stages stay effectively immutable. ``ContentBlock`` is a JSON object with a string ``type``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeAlias

__all__ = ["MAX_SAFE_INTEGER", "ContentBlock", "JsonValue", "format_ms"]

MAX_SAFE_INTEGER: Final = 2**53 - 1
"""The largest integer a JSON peer reads exactly (bounds ``max_tokens``)."""

JsonValue: TypeAlias = Mapping[str, "JsonValue"] | Sequence["JsonValue"] | str | int | float | bool | None
"""Read-only JSON: objects as ``Mapping``, arrays as ``Sequence``."""

ContentBlock: TypeAlias = dict[str, Any]
"""A JSON object with a string ``type``; text blocks are ``{"type": "text", "text": str}``."""


def format_ms(ms: float) -> str:
    """Format milliseconds as a JSON number would print: ``100`` for ``100.0``, ``1.5`` for ``1.5``."""
    if isinstance(ms, int):
        return str(ms)
    if math.isfinite(ms) and ms.is_integer():
        return str(int(ms))
    return repr(ms)
