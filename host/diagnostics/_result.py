"""The published result of a subagent run, and the exact 4096-byte bound on its diagnostic.

``SubagentResult`` is frozen; ``""`` counts as no diagnostic and is normalized to ``None``, so the serialized form
never has a ``diagnostic`` key without text. ``limit_diagnostic`` never splits a UTF-8 sequence and never raises.
"""

from __future__ import annotations

import re
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, field_validator

from host._json import ContentBlock

__all__ = ["DIAGNOSTIC_LIMIT_BYTES", "DIAGNOSTIC_TRUNCATED_SUFFIX", "SubagentResult", "limit_diagnostic"]

DIAGNOSTIC_LIMIT_BYTES: Final = 4096
"""Upper bound, in UTF-8 bytes, of every diagnostic a settled result carries."""

DIAGNOSTIC_TRUNCATED_SUFFIX: Final = "\n[diagnostic truncated]"
"""Appended to a diagnostic cut down to the bound (23 bytes in UTF-8)."""

_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


class SubagentResult(BaseModel):
    """What a run hands back: the child's assistant output, a stop reason, and an optional safe diagnostic."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    output: list[ContentBlock] = []
    """The child's assistant output (provider-specific fold); ``[]`` when none."""
    stop_reason: str
    """``completed``, ``max-tokens``, ``refusal``, ``aborted`` or ``error`` from the providers; consumers accept any."""
    diagnostic: str | None = None
    """Provider-written failure detail built from closed facts; absent on ``completed`` and on local cancel."""

    @field_validator("diagnostic")
    @classmethod
    def _empty_is_absent(cls, value: str | None) -> str | None:
        return value or None

    def to_json(self) -> dict[str, Any]:
        """Return the JSON form; a result without a diagnostic has no ``diagnostic`` key."""
        return self.model_dump(mode="json", exclude_none=True)


def limit_diagnostic(text: str) -> str:
    """Bound ``text`` to 4096 UTF-8 bytes, cutting on a character boundary and marking the cut.

    Lone surrogates become U+FFFD first (``encode(errors="replace")`` would give ``?``). Text of at most 4096 bytes
    is returned unchanged; longer text keeps the longest whole-character prefix of at most 4073 bytes plus
    ``"\\n[diagnostic truncated]"``.
    """
    text = _LONE_SURROGATE.sub("\ufffd", text)
    encoded = text.encode("utf-8")
    if len(encoded) <= DIAGNOSTIC_LIMIT_BYTES:
        return text
    cut = DIAGNOSTIC_LIMIT_BYTES - len(DIAGNOSTIC_TRUNCATED_SUFFIX.encode("utf-8"))
    # A continuation byte at the cut means the character straddles it: drop that whole character.
    while encoded[cut] & 0xC0 == 0x80:
        cut -= 1
    return encoded[:cut].decode("utf-8") + DIAGNOSTIC_TRUNCATED_SUFFIX
