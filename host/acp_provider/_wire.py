"""Lenient extraction from ACP wire messages and the provider's closed mapping tables.

Everything the agent writes is peer-controlled: fields are read from the raw dict one by one, with a closed-set
fallback (``unknown``/``error``), so an unknown stop reason, tool kind or update kind never fails a run. Nothing
here copies child-controlled text into a host-visible fact.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, cast

from host.diagnostics import AcpStopReasonFact, AcpToolKind, PermissionDecision, PermissionPolicy, acp_tool_kind

__all__ = [
    "AUTH_REQUIRED_CODE",
    "PermissionChoice",
    "as_array",
    "as_object",
    "cancelled_answer",
    "choose_permission",
    "map_stop_reason",
    "prompt_text_blocks",
    "session_id_of",
    "tool_kind_of",
    "update_of",
]

AUTH_REQUIRED_CODE: Final = -32000
"""ACP ``ErrorCode`` "Authentication required": a closed, safe fact (docs/behaviour.md#acp-auth-required)."""

_STOP_REASONS: Final[Mapping[str, str]] = {
    "end_turn": "completed",
    "max_tokens": "max-tokens",
    "refusal": "refusal",
    "cancelled": "aborted",
    "max_turn_requests": "error",
}

_ALLOW_OPTION_KINDS: Final = ("allow_once", "allow_always")


def as_object(value: object) -> Mapping[str, object] | None:
    """``value`` as a JSON object, or ``None`` when it is anything else."""
    # Decoded JSON objects are plain dicts: test that first, the ABC check is slow on the streaming hot path.
    if type(value) is dict or isinstance(value, Mapping):
        return cast("Mapping[str, object]", value)
    return None


def as_array(value: object) -> Sequence[object]:
    """``value`` as a JSON array, or ``()`` when it is anything else."""
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return cast("Sequence[object]", value)
    return ()


def map_stop_reason(result: object) -> tuple[str, AcpStopReasonFact | None]:
    """Map a ``session/prompt`` result to ``(stop_reason, stop-reason fact)``.

    Returns:
        The shared stop reason, and the fact for a failure line: ``max_turn_requests`` for the remote limit,
        ``unknown`` for any unknown, missing or non-string value, else ``None``. The raw value never leaves.
    """
    obj = as_object(result)
    raw = obj.get("stopReason") if obj is not None else None
    if isinstance(raw, str) and raw in _STOP_REASONS:
        return _STOP_REASONS[raw], ("max_turn_requests" if raw == "max_turn_requests" else None)
    return "error", "unknown"


def update_of(params: Mapping[str, object]) -> Mapping[str, object] | None:
    """The ``update`` object of ``session/update`` params, or ``None`` when it is not an object."""
    return as_object(params.get("update"))


def prompt_text_blocks(prompt: Sequence[Mapping[str, object]]) -> list[dict[str, object]]:
    """Translate a request prompt to ACP: its text blocks in order, every other block dropped."""
    blocks: list[dict[str, object]] = []
    for block in prompt:
        text = block.get("text")
        if block.get("type") == "text" and isinstance(text, str):
            blocks.append({"type": "text", "text": text})
    return blocks


def tool_kind_of(params: Mapping[str, object]) -> AcpToolKind:
    """The closed-set tool kind of a permission request (``unknown`` for anything else, or no ``toolCall``)."""
    tool_call = as_object(params.get("toolCall"))
    return acp_tool_kind(tool_call.get("kind") if tool_call is not None else None)


@dataclass(frozen=True, slots=True)
class PermissionChoice:
    """An unattended permission answer for the wire, and the closed decision recorded for the run."""

    answer: dict[str, object]
    """The ``session/request_permission`` result."""
    decision: PermissionDecision
    """What the run records: policy, closed tool kind, allowed/denied."""


def choose_permission(policy: PermissionPolicy, params: Mapping[str, object]) -> PermissionChoice:
    """Decide a ``session/request_permission`` by policy; a ``reject_*`` option is never selected."""
    kind = tool_kind_of(params)
    if policy == "allow":
        for item in as_array(params.get("options")):
            option = as_object(item)
            if option is None:
                continue
            option_id = option.get("optionId")
            if option.get("kind") in _ALLOW_OPTION_KINDS and isinstance(option_id, str):
                return PermissionChoice(
                    {"outcome": {"outcome": "selected", "optionId": option_id}},
                    PermissionDecision(policy, kind, "allowed"),
                )
    return PermissionChoice(cancelled_answer(), PermissionDecision(policy, kind, "denied"))


def cancelled_answer() -> dict[str, object]:
    """A fresh ``{"outcome": {"outcome": "cancelled"}}`` permission answer."""
    return {"outcome": {"outcome": "cancelled"}}


def session_id_of(result: object) -> str | None:
    """The string ``sessionId`` of a ``session/new`` result, else ``None``."""
    obj = as_object(result)
    session_id = obj.get("sessionId") if obj is not None else None
    return session_id if isinstance(session_id, str) else None
