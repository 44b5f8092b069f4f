"""Operator-facing text of a run: one shape for ``runs show`` and the CLI's live detail, safe on a terminal.

``neutralise`` escapes every control character of child text except newline and tab (C0, DEL, C1: so no escape
sequence, carriage return or backspace reaches the terminal); the block lines are ``[thinking]`` followed by the
reasoning text, and ``[tool] <title> (<kind>, <status>)``.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["STOPPED_MARKER", "THINKING_HEADER", "neutralise", "tool_line"]

THINKING_HEADER: Final = "[thinking]"
"""The line a reasoning block is shown under."""
STOPPED_MARKER: Final = "[Stopped]"
"""Marks the end of an interrupted message."""

_CONTROL: Final = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def neutralise(text: str) -> str:
    """``text`` with every control character but ``\\n`` and ``\\t`` shown as a ``\\xNN`` escape."""
    return _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


def tool_line(title: object, kind: object, status: object) -> str:
    """``[tool] <title> (<kind>, <status>)``; a missing title or status shows as ``-``, one line, neutralised."""

    def shown(value: object) -> str:
        return neutralise(value).replace("\n", " ") if isinstance(value, str) and value else "-"

    return f"[tool] {shown(title)} ({shown(kind)}, {shown(status)})"
