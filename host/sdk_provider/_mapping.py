"""The provider's closed mappings: error class → category, last ``turn/end`` → result, and the output fold.

Nothing here reads a message, an error payload or an unknown reason value: categories come from exception classes
only and unknown kinds map to fixed texts (docs/behaviour.md#sdk-output-fold, #sdk-classification,
#sdk-turn-end-mapping).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, cast

from host._exceptions import (
    JsonRpcResponseError,
    QueueOverflowError,
    RequestTimeoutError,
    SdkProtocolError,
    TransportClosedError,
)
from host._json import ContentBlock
from host._text import joined_text
from host.diagnostics import SdkCategory, sdk_failure_line
from host.sdk_provider.client import turn_end_reason

__all__ = ["OutputFold", "classify_error", "delta_text", "map_turn_end", "result_of_turn_end"]

_CHILD_ERROR: Final = sdk_failure_line("session-run", "child-error")
_CHILD_DISPOSED: Final = sdk_failure_line("session-run", "child-disposed")
_CHILD_UNKNOWN: Final = sdk_failure_line("session-run", "child-unknown")
_MISSING_TERMINAL: Final = sdk_failure_line("session-run", "missing-terminal")

# Turn-end kinds whose result carries no diagnostic (aborted is decided by its cause).
_PLAIN_KINDS: Final[Mapping[str, str]] = {
    "completed": "completed",
    "max-tokens": "max-tokens",
    "blocked": "refusal",
    "interrupted": "error",
}


def classify_error(error: BaseException) -> SdkCategory:
    """The failure category of a raw error, by class only (docs/behaviour.md#sdk-classification)."""
    if isinstance(error, TransportClosedError):
        return "transport"
    if isinstance(error, SdkProtocolError | JsonRpcResponseError):
        return "protocol"
    if isinstance(error, RequestTimeoutError):
        return "timeout"
    if isinstance(error, QueueOverflowError):
        return "output-limit"
    return "unknown"


def map_turn_end(reason: Mapping[str, object] | None) -> tuple[str, str | None]:
    """Map the last ``turn/end`` reason of the interval (``None``: there was none) to a stop reason and diagnostic."""
    if reason is None:
        return "error", _MISSING_TERMINAL
    kind = reason.get("kind")
    if isinstance(kind, str):
        plain = _PLAIN_KINDS.get(kind)
        if plain is not None:
            return plain, None
        if kind == "aborted":
            cause = reason.get("reason")
            disposed = isinstance(cause, Mapping) and cast(Mapping[str, object], cause).get("kind") == "disposed"
            return "aborted", _CHILD_DISPOSED if disposed else None
        if kind == "error":
            return "error", _CHILD_ERROR
    return "error", _CHILD_UNKNOWN


def result_of_turn_end(event: Mapping[str, object] | None) -> tuple[str, str | None]:
    """Map the run's last validated ``turn/end`` (``None``: the run had none)."""
    return map_turn_end(turn_end_reason(event) if event is not None else None)


def delta_text(event: Mapping[str, Any]) -> str | None:
    """The non-empty text of a validated ``assistant/chunk`` text-delta event, else ``None``."""
    if event.get("type") != "assistant/chunk":
        return None
    data = event.get("data")
    chunk = cast(Mapping[str, Any], data).get("chunk") if isinstance(data, Mapping) else None
    if not isinstance(chunk, Mapping):
        return None
    fields = cast(Mapping[str, Any], chunk)
    text = fields.get("text")
    return text if fields.get("type") == "text-delta" and isinstance(text, str) and text else None


class OutputFold:
    """The run's output: the last non-empty ``assistant/message`` content, else the concatenated text deltas.

    Fed only with validated root events after the receipt (the run bounds the texts it appends); ``freeze`` fixes the
    snapshot.
    """

    def __init__(self) -> None:
        self._message: list[ContentBlock] | None = None
        self._deltas: list[str] = []
        self._frozen: list[ContentBlock] | None = None

    @property
    def frozen(self) -> bool:
        """Whether the snapshot is fixed."""
        return self._frozen is not None

    def observe_message(self, event: Mapping[str, Any]) -> None:
        """Take a non-empty ``assistant/message`` content as the candidate; other events and frozen: a no-op."""
        if self._frozen is not None or event.get("type") != "assistant/message":
            return
        data = event.get("data")
        if not isinstance(data, Mapping):
            return
        content = cast(Mapping[str, Any], cast(Mapping[str, Any], data)["message"])["content"]
        if content:  # an empty (usage-only) message never erases the candidate or the deltas
            self._message = cast(list[ContentBlock], content)

    def append_text(self, text: str) -> None:
        """Append one text delta's text to the fallback; a no-op once frozen."""
        if self._frozen is None and text:
            self._deltas.append(text)

    def freeze(self) -> None:
        """Fix the output snapshot; idempotent."""
        if self._frozen is not None:
            return
        if self._message is not None:
            self._frozen = [dict(block) for block in self._message]
        else:
            text = joined_text(self._deltas)
            self._frozen = [{"type": "text", "text": text}] if text else []

    def output(self) -> list[ContentBlock]:
        """The frozen snapshot (freezing now if needed), as a fresh list."""
        self.freeze()
        assert self._frozen is not None
        return [dict(block) for block in self._frozen]
