"""Lossless JSON snapshots (docs/behaviour.md#registry-lossless-json).

``snapshot_json`` returns a detached deep copy, or ``NOT_LOSSLESS`` for anything JSON cannot carry exactly: NaN,
±inf, ``-0.0``, non-``str`` keys, cycles, and every type other than ``None``/``bool``/``str``/``int``/``float``,
lists, tuples (copied as lists) and dicts. An exception raised by a custom ``__getitem__`` or iterator propagates.
"""

from __future__ import annotations

import enum
import math
from typing import Final, Literal, cast

from host._json import JsonValue

__all__ = ["NOT_LOSSLESS", "NotLossless", "snapshot_json"]


class NotLossless(enum.Enum):
    """The type of the ``NOT_LOSSLESS`` marker."""

    NOT_LOSSLESS = "not-lossless"


NOT_LOSSLESS: Final = NotLossless.NOT_LOSSLESS
"""Returned by ``snapshot_json`` when the value is not losslessly JSON-serializable."""


class _NotLosslessSignal(Exception):
    """Internal unwinding from a nested value; never escapes this module."""


def snapshot_json(value: object) -> JsonValue | Literal[NotLossless.NOT_LOSSLESS]:
    """Return a detached deep copy of ``value``, or ``NOT_LOSSLESS``.

    Raises:
        Exception: Whatever a custom ``__getitem__`` or iterator raised during the copy.
    """
    try:
        return _copy(value, set())
    except _NotLosslessSignal:
        return NOT_LOSSLESS


def _copy(value: object, ancestors: set[int]) -> JsonValue:
    # Exact scalar types only: a subclass (an enum, say) would not round-trip through JSON unchanged.
    kind = type(value)
    if kind is str or kind is int or value is None or value is True or value is False:
        return cast("JsonValue", value)
    if kind is dict or kind is list:
        # The plain containers every tool value is made of, with their str/int/bool/None members copied inline
        # (no call per member); subclasses take the general path below, which honours their own iteration.
        marker = id(value)
        if marker in ancestors:
            raise _NotLosslessSignal
        ancestors.add(marker)
        try:
            if kind is dict:
                copied: dict[str, JsonValue] = {}
                for key, item in cast("dict[object, object]", value).items():
                    if type(key) is not str:
                        raise _NotLosslessSignal
                    assert isinstance(key, str)
                    member = type(item)
                    copied[key] = (
                        cast("JsonValue", item)
                        if member is str or member is int or member is bool or item is None
                        else _copy(item, ancestors)
                    )
                return copied
            return [
                cast("JsonValue", item)
                if (member := type(item)) is str or member is int or member is bool or item is None
                else _copy(item, ancestors)
                for item in cast("list[object]", value)
            ]
        finally:
            ancestors.discard(marker)
    if kind is float:
        assert isinstance(value, float)
        if not math.isfinite(value) or (value == 0.0 and math.copysign(1.0, value) < 0):
            raise _NotLosslessSignal
        return value
    if isinstance(value, (list, tuple, dict)):
        container = cast("list[object] | tuple[object, ...] | dict[object, object]", value)
        marker = id(container)
        if marker in ancestors:
            raise _NotLosslessSignal
        ancestors.add(marker)
        try:
            if isinstance(container, dict):
                copied_members: dict[str, JsonValue] = {}
                for key in container:
                    if type(key) is not str:
                        raise _NotLosslessSignal
                    assert isinstance(key, str)
                    copied_members[key] = _copy(container[key], ancestors)
                return copied_members
            return [_copy(item, ancestors) for item in container]
        finally:
            ancestors.discard(marker)
    raise _NotLosslessSignal
