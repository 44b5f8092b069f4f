"""Aligned text tables for ``providers`` and ``runs list``: a header row, then one line per row.

A table is a tuple of ``Column``s, each a header and a function of the row, so adding a column is one line. Every
cell is made one safe line before it is measured: control characters, line and paragraph separators, bidi and other
format characters are shown as escapes (``\\n``, ``\\x1b``, ``\\u202e``), so no cell can move the cursor, start a
new line or reorder text. Widths count terminal columns (wide East Asian characters take two, combining marks none)
and a cell longer than its column's ``max_width`` is cut with ``…``, so child or config text can neither break the
alignment nor pose as another column. The last column is not padded.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Generic, Literal, TypeVar

__all__ = ["Column", "render_table"]

RowT = TypeVar("RowT")

_GAP: Final = "  "
_ELLIPSIS: Final = "…"
_ESCAPED_CATEGORIES: Final = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
"""Controls, format characters (bidi, zero-width), surrogates, private use, unassigned, line/paragraph separators."""
_ZERO_WIDTH_CATEGORIES: Final = frozenset({"Mn", "Me"})
_NAMED_ESCAPES: Final = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


@dataclass(frozen=True, slots=True)
class Column(Generic[RowT]):
    """One column: its header, the cell text of a row, and how it is laid out."""

    header: str
    cell: Callable[[RowT], str]
    max_width: int | None = None
    """The widest a cell is shown (terminal columns; ``None``: no limit); longer cells end in ``…``."""
    align: Literal["<", ">"] = "<"


def render_table(columns: Sequence[Column[RowT]], rows: Sequence[RowT]) -> str:
    """The header line and one line per row, columns separated by two spaces; every line ends with ``\\n``."""
    cells = [[column.header for column in columns]]
    cells += [[_fit(safe_cell(column.cell(row)), column.max_width) for column in columns] for row in rows]
    widths = [max(display_width(line[index]) for line in cells) for index in range(len(columns))]
    lines: list[str] = []
    for line in cells:
        padded: list[str] = []
        for index, (column, text) in enumerate(zip(columns, line, strict=True)):
            last = index == len(columns) - 1
            padding = " " * (widths[index] - display_width(text))
            if column.align == ">":
                padded.append(padding + text)
            else:
                padded.append(text if last else text + padding)
        lines.append(_GAP.join(padded).rstrip() + "\n")
    return "".join(lines)


def safe_cell(text: str) -> str:
    """``text`` as one line with no character that can drive a terminal or break alignment (shown escaped)."""
    return "".join(_escaped(char) for char in text)


def display_width(text: str) -> int:
    """The terminal columns ``text`` takes (after ``safe_cell``): wide characters 2, combining marks 0."""
    return sum(_char_width(char) for char in text)


def _escaped(char: str) -> str:
    if char in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[char]
    if unicodedata.category(char) not in _ESCAPED_CATEGORIES:
        return char
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _char_width(char: str) -> int:
    if unicodedata.category(char) in _ZERO_WIDTH_CATEGORIES:
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def _fit(text: str, max_width: int | None) -> str:
    """``text`` cut to at most ``max_width`` columns, ending in ``…`` when it was cut."""
    if max_width is None or display_width(text) <= max_width:
        return text
    kept: list[str] = []
    used = 0
    for char in text:
        width = _char_width(char)
        if used + width > max_width - 1:
            break
        kept.append(char)
        used += width
    return "".join(kept) + _ELLIPSIS
