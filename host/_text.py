"""Text a child sends in UTF-16 code units: joining its chunks, and encoding what may hold a lone surrogate.

A JavaScript agent slices its strings at UTF-16 code units, so a chunk can end between the two halves of a
surrogate pair (an emoji), and ``JSON.stringify`` then writes each half as a ``\\uXXXX`` escape: the host reads them
as two lone surrogates. Text the host hands on as a result (a run's output, its message in the record, live
progress) is made well-formed (:func:`well_formed`): each such pair becomes the character it encodes, and a
surrogate with no partner becomes U+FFFD, as a browser does, so that every strict JSON reader (serde, pydantic)
accepts it. The record keeps every chunk as it came. Any encoder that may still meet a lone surrogate (a request
id or a label echoed back) writes it as a JSON ``\\uXXXX`` escape (:func:`encode_json`), which is lossless.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, Final

__all__ = ["encode_json", "ends_inside_a_pair", "joined_text", "utf8_size", "well_formed"]

_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_ASCII_JSON: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True, allow_nan=False)
_UTF8_JSON: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def well_formed(text: str) -> str:
    """``text`` with each high surrogate directly followed by a low one made the character the pair encodes, and
    every other surrogate U+FFFD."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def joined_text(parts: Iterable[str]) -> str:
    """``well_formed("".join(parts))``: chunks joined, a pair split between two of them made whole again."""
    return well_formed("".join(parts))


def ends_inside_a_pair(text: str) -> bool:
    """Whether ``text`` ends with a high surrogate (its low half may be in the next chunk)."""
    return bool(text) and "\ud800" <= text[-1] <= "\udbff"


def utf8_size(text: str) -> int:
    """The bytes ``text`` takes as UTF-8, a lone surrogate counted as the 3 bytes it encodes to."""
    # ASCII (most deltas: the output bound counts every one) is one byte per character: no encoded copy needed.
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def encode_json(value: Any) -> bytes:
    """The compact JSON of ``value`` as UTF-8, or, when it holds a lone surrogate, with ASCII escapes (lossless,
    valid JSON).

    Raises:
        TypeError | ValueError | RecursionError: as ``json.dumps(value, allow_nan=False)``.
    """
    try:
        return _UTF8_JSON.encode(value).encode("utf-8")
    except UnicodeEncodeError:
        return _ASCII_JSON.encode(value).encode("ascii")
