"""JSON type aliases shared across the host.

``JsonValue`` is *read-only* JSON: pyright rejects mutation through it, which is how snapshots handed to tool
stages stay effectively immutable. ``ContentBlock`` is a JSON object with a string ``type``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

__all__ = ["ContentBlock", "JsonValue"]

JsonValue: TypeAlias = Mapping[str, "JsonValue"] | Sequence["JsonValue"] | str | int | float | bool | None
"""Read-only JSON: objects as ``Mapping``, arrays as ``Sequence``."""

ContentBlock: TypeAlias = dict[str, Any]
"""A JSON object with a string ``type``; text blocks are ``{"type": "text", "text": str}``."""
