"""Operator-facing text of a run: one shape for ``runs show`` and ``run``'s live detail, safe on a terminal.

``neutralise`` escapes every control character of child text except newline and tab (C0, DEL, C1 and the bidi
overrides: so no escape sequence, carriage return, backspace or reordering reaches the terminal); it is the one
neutraliser, also used by the CLI's output. The block lines are ``[thinking]`` followed by the
reasoning text, and ``[tool] <title> (<kind>, <status>)``.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["STOPPED_MARKER", "THINKING_HEADER", "duration_text", "neutralise", "tool_line"]

THINKING_HEADER: Final = "[thinking]"
"""The line a reasoning block is shown under."""
STOPPED_MARKER: Final = "[Stopped]"
"""Marks the end of an interrupted message."""

_CONTROL: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def neutralise(text: str) -> str:
    """``text`` with every control character but ``\\n`` and ``\\t`` (C0, DEL, C1, line separators, bidi overrides)
    shown as a visible ``\\xNN`` or ``\\uNNNN`` escape."""
    return _CONTROL.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def tool_line(title: object, kind: object, status: object) -> str:
    """``[tool] <title> (<kind>, <status>)``; a missing title or status shows as ``-``, one line, neutralised."""

    def shown(value: object) -> str:
        return neutralise(value).replace("\n", " ") if isinstance(value, str) and value else "-"

    return f"[tool] {shown(title)} ({shown(kind)}, {shown(status)})"


def duration_text(duration_ms: object) -> str:
    """``850 ms`` below a second, ``1.5 s`` from one; ``-`` when ``duration_ms`` is not an integer."""
    if not isinstance(duration_ms, int) or isinstance(duration_ms, bool):
        return "-"
    return f"{duration_ms} ms" if duration_ms < 1000 else f"{duration_ms / 1000:.1f} s"
