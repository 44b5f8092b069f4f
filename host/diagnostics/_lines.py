"""The fixed, model-visible failure and permission lines of both providers, built only from closed facts.

Field order is fixed and every value comes from a closed ``Literal`` set, an exit code or a signal name, so no
child-controlled text can reach a diagnostic or a raised safe message. Raw errors ride on ``__cause__`` only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from host._exceptions import AcpRunFailure, SdkRunFailure

__all__ = [
    "ACP_RUN_FAILURE_PREFIX",
    "SDK_RUN_FAILURE_PREFIX",
    "AcpCategory",
    "AcpFailureFacts",
    "AcpStage",
    "AcpStopReasonFact",
    "AcpToolKind",
    "PermissionDecision",
    "PermissionOutcome",
    "PermissionPolicy",
    "SdkCategory",
    "SdkStage",
    "acp_diagnostic",
    "acp_failure_line",
    "acp_run_failure",
    "acp_tool_kind",
    "permission_line",
    "sdk_failure_line",
    "sdk_run_failure",
]

AcpStage = Literal["initialize", "new-session", "resume", "prompt", "process", "teardown", "workspace"]
AcpCategory = Literal[
    "configuration",
    "protocol",
    "transport",
    "process-start",
    "process-exit",
    "remote-limit",
    "unknown",
    "auth-required",
    "timeout",
    "output-limit",
    "setup-failed",
    "session-expired",
]
AcpStopReasonFact = Literal["max_turn_requests", "unknown"]
AcpToolKind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other", "unknown"
]
PermissionPolicy = Literal["allow", "reject"]
PermissionOutcome = Literal["allowed", "denied"]
SdkStage = Literal["initialize", "resume", "session-run", "shutdown", "workspace"]
SdkCategory = Literal[
    "configuration",
    "protocol",
    "transport",
    "timeout",
    "unknown",
    "child-error",
    "child-disposed",
    "child-unknown",
    "missing-terminal",
    "output-limit",
    "setup-failed",
    "session-expired",
]

ACP_RUN_FAILURE_PREFIX: Final = "subagent-acp: "
"""Prefix of every raised ACP safe message."""
SDK_RUN_FAILURE_PREFIX: Final = "subagent-dsh-sdk: "
"""Prefix of every raised DSH SDK safe message."""

_ACP_FAILURE_TEMPLATE: Final = "Subagent failure (provider: ACP; {fields})"
_SDK_FAILURE_TEMPLATE: Final = "Subagent failure (provider: DSH SDK; stage: {stage}; category: {category})"
_PERMISSION_TEMPLATE: Final = "ACP unattended decision (policy: {policy}; request: {request}; decision: {decision})"

# The tool kinds of the ACP schema; anything else (missing, null, non-string, a future value) reads "unknown".
_KNOWN_TOOL_KINDS: Final[dict[str, AcpToolKind]] = {
    kind: kind
    for kind in ("read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other")
}


@dataclass(frozen=True, slots=True)
class AcpFailureFacts:
    """The closed facts of one ACP failure, in the order the failure line prints them."""

    stage: AcpStage
    category: AcpCategory
    stop_reason: AcpStopReasonFact | None = None
    """Only ``max_turn_requests`` or the literal ``unknown``; the raw wire value is never copied."""
    exit_code: int | None = None
    """The direct child's exit code when observed (``0`` included)."""
    signal: str | None = None
    """The name of the signal that ended the direct child (``SIGTERM``), when observed."""

    def as_mapping(self) -> dict[str, object]:
        """Return the present facts as a dict, in line order (the ``facts`` of a raised failure)."""
        facts: dict[str, object] = {"stage": self.stage, "category": self.category}
        if self.stop_reason is not None:
            facts["stop_reason"] = self.stop_reason
        if self.exit_code is not None:
            facts["exit_code"] = self.exit_code
        if self.signal is not None:
            facts["signal"] = self.signal
        return facts


@dataclass(frozen=True, slots=True)
class PermissionDecision:
    """The latest unattended permission decision of an ACP run: only closed values are recorded."""

    policy: PermissionPolicy
    request: AcpToolKind
    decision: PermissionOutcome


def acp_tool_kind(value: object) -> AcpToolKind:
    """Map a peer-supplied ACP tool kind onto the closed set, ``unknown`` for anything outside it."""
    if isinstance(value, str):
        return _KNOWN_TOOL_KINDS.get(value, "unknown")
    return "unknown"


def acp_failure_line(facts: AcpFailureFacts) -> str:
    """Return the ACP failure line, fields in fixed order.

    ``Subagent failure (provider: ACP; stage: …; category: …[; stop reason: …][; exit code: …][; signal: …])``.
    """
    fields = [f"stage: {facts.stage}", f"category: {facts.category}"]
    if facts.stop_reason is not None:
        fields.append(f"stop reason: {facts.stop_reason}")
    if facts.exit_code is not None:
        fields.append(f"exit code: {facts.exit_code}")
    if facts.signal is not None:
        fields.append(f"signal: {facts.signal}")
    return _ACP_FAILURE_TEMPLATE.format(fields="; ".join(fields))


def permission_line(decision: PermissionDecision) -> str:
    """Return ``ACP unattended decision (policy: …; request: …; decision: …)``."""
    return _PERMISSION_TEMPLATE.format(policy=decision.policy, request=decision.request, decision=decision.decision)


def acp_diagnostic(facts: AcpFailureFacts | None, decision: PermissionDecision | None) -> str | None:
    """Combine a failure and the latest permission decision: ``D(facts, d)``.

    The failure line comes first and the permission line second, joined by ``"\\n"``. Without facts (a remote
    ``max_tokens``, ``refusal`` or ``cancelled``) the permission line alone is the diagnostic; with neither there is
    none.
    """
    lines: list[str] = []
    if facts is not None:
        lines.append(acp_failure_line(facts))
    if decision is not None:
        lines.append(permission_line(decision))
    return "\n".join(lines) or None


def acp_run_failure(facts: AcpFailureFacts, cause: BaseException | None = None) -> AcpRunFailure:
    """Build the safe raised form ``subagent-acp: <failure line>``; ``cause``, if given, becomes ``__cause__``."""
    failure = AcpRunFailure(ACP_RUN_FAILURE_PREFIX + acp_failure_line(facts), facts.as_mapping())
    if cause is not None:
        failure.__cause__ = cause
    return failure


def sdk_failure_line(stage: SdkStage, category: SdkCategory) -> str:
    """Return ``Subagent failure (provider: DSH SDK; stage: <stage>; category: <category>)``."""
    return _SDK_FAILURE_TEMPLATE.format(stage=stage, category=category)


def sdk_run_failure(stage: SdkStage, category: SdkCategory, cause: BaseException | None = None) -> SdkRunFailure:
    """Build the safe raised form ``subagent-dsh-sdk: <failure line>`` with ``facts == {stage, category}``."""
    failure = SdkRunFailure(
        SDK_RUN_FAILURE_PREFIX + sdk_failure_line(stage, category), {"stage": stage, "category": category}
    )
    if cause is not None:
        failure.__cause__ = cause
    return failure
