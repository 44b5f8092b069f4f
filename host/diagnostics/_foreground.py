"""The foreground texts of a run: its output's text and the exact failure headline of a non-completed result."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final

from host._json import ContentBlock
from host.diagnostics._result import SubagentResult

__all__ = ["foreground_failure_message", "text_of"]

logger = logging.getLogger(__name__)

_HEADLINES: Final[dict[str, str]] = {
    "aborted": "subagent run was cancelled",
    "error": "subagent run failed",
    "max-tokens": "subagent run hit its token limit before finishing",
    "refusal": "subagent declined the task",
}
_ABNORMAL_HEADLINE: Final = "subagent run ended abnormally ({stop_reason})"
_DIAGNOSTIC_SECTION: Final = "\nDiagnostic: "
_PARTIAL_SECTION: Final = "\nPartial output before the run ended:\n"


def text_of(blocks: Sequence[ContentBlock]) -> str:
    """Concatenate the text of every ``text`` block, with no separator; other blocks are skipped."""
    parts: list[str] = []
    for block in blocks:
        text = block.get("text")
        if block.get("type") == "text" and isinstance(text, str):
            parts.append(text)
    return "".join(parts)


def foreground_failure_message(result: SubagentResult) -> str:
    """Return the text of a non-completed run: headline, then the diagnostic and the partial output if any."""
    message = _HEADLINES.get(result.stop_reason) or _ABNORMAL_HEADLINE.format(stop_reason=result.stop_reason)
    if result.diagnostic:
        message += _DIAGNOSTIC_SECTION + result.diagnostic
    partial = text_of(result.output)
    if partial:
        message += _PARTIAL_SECTION + partial
    return message
