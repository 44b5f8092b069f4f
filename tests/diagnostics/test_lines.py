"""The fixed ACP and DSH SDK failure lines, the permission line and their combination
(docs/behaviour.md#acp-diagnostics)."""

from __future__ import annotations

import pytest

from host._exceptions import AcpRunFailure, SdkRunFailure, SubagentHostError, describe_error
from host.diagnostics import (
    AcpFailureFacts,
    PermissionDecision,
    acp_diagnostic,
    acp_failure_line,
    acp_run_failure,
    acp_tool_kind,
    sdk_failure_line,
    sdk_run_failure,
)
from host.diagnostics._lines import permission_line

REMOTE_LIMIT = AcpFailureFacts("prompt", "remote-limit", stop_reason="max_turn_requests")
REJECT_EDIT = PermissionDecision("reject", "edit", "denied")


def test_acp_failure_line_with_only_stage_and_category() -> None:
    assert (
        acp_failure_line(AcpFailureFacts("prompt", "transport"))
        == "Subagent failure (provider: ACP; stage: prompt; category: transport)"
    )


def test_acp_failure_line_prints_exit_code_zero() -> None:
    facts = AcpFailureFacts("process", "process-exit", exit_code=0)

    assert (
        acp_failure_line(facts)
        == "Subagent failure (provider: ACP; stage: process; category: process-exit; exit code: 0)"
    )


def test_acp_failure_line_prints_every_field_in_fixed_order() -> None:
    facts = AcpFailureFacts("prompt", "unknown", stop_reason="unknown", exit_code=3, signal="SIGKILL")

    assert acp_failure_line(facts) == (
        "Subagent failure (provider: ACP; stage: prompt; category: unknown; stop reason: unknown; "
        "exit code: 3; signal: SIGKILL)"
    )


def test_acp_failure_line_prints_exit_code_before_signal() -> None:
    facts = AcpFailureFacts("teardown", "process-exit", exit_code=None, signal="SIGTERM")

    assert acp_failure_line(facts) == (
        "Subagent failure (provider: ACP; stage: teardown; category: process-exit; signal: SIGTERM)"
    )


def test_permission_line_names_policy_request_and_decision() -> None:
    assert permission_line(PermissionDecision("allow", "execute", "allowed")) == (
        "ACP unattended decision (policy: allow; request: execute; decision: allowed)"
    )


def test_acp_diagnostic_joins_failure_then_permission_with_a_newline() -> None:
    assert acp_diagnostic(REMOTE_LIMIT, REJECT_EDIT) == (
        "Subagent failure (provider: ACP; stage: prompt; category: remote-limit; stop reason: max_turn_requests)\n"
        "ACP unattended decision (policy: reject; request: edit; decision: denied)"
    )


def test_acp_diagnostic_without_decision_is_the_failure_line() -> None:
    assert acp_diagnostic(REMOTE_LIMIT, None) == acp_failure_line(REMOTE_LIMIT)


def test_acp_diagnostic_without_failure_is_the_permission_line_alone() -> None:
    assert acp_diagnostic(None, REJECT_EDIT) == permission_line(REJECT_EDIT)
    assert acp_diagnostic(None, None) is None


def test_acp_run_failure_is_safe_and_keeps_facts_and_cause() -> None:
    raw = OSError("spawn rejected /private/path SECRET_TOKEN")
    failure = acp_run_failure(AcpFailureFacts("process", "process-start"), raw)

    assert isinstance(failure, AcpRunFailure)
    assert isinstance(failure, SubagentHostError)
    assert str(failure) == "subagent-acp: Subagent failure (provider: ACP; stage: process; category: process-start)"
    assert failure.facts == {"stage": "process", "category": "process-start"}
    assert failure.__cause__ is raw
    assert "SECRET_TOKEN" not in str(failure)


def test_acp_run_failure_facts_carry_the_observed_exit() -> None:
    failure = acp_run_failure(AcpFailureFacts("initialize", "process-exit", exit_code=17))

    assert failure.facts == {"stage": "initialize", "category": "process-exit", "exit_code": 17}
    assert failure.__cause__ is None


def test_sdk_failure_line_and_raised_form() -> None:
    raw = RuntimeError("runtime exited with SECRET_TOKEN")
    failure = sdk_run_failure("initialize", "transport", raw)

    assert sdk_failure_line("session-run", "child-error") == (
        "Subagent failure (provider: DSH SDK; stage: session-run; category: child-error)"
    )
    assert isinstance(failure, SdkRunFailure)
    assert describe_error(failure) == (
        "SdkRunFailure: subagent-dsh-sdk: Subagent failure (provider: DSH SDK; stage: initialize; category: transport)"
    )
    assert failure.facts == {"stage": "initialize", "category": "transport"}
    assert failure.__cause__ is raw


@pytest.mark.parametrize(
    "kind", ["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"]
)
def test_closed_tool_kinds_map_to_themselves(kind: str) -> None:
    assert acp_tool_kind(kind) == kind


@pytest.mark.parametrize("value", [None, "future_kind", 7, True, "", "unknown"])
def test_anything_outside_the_closed_tool_kinds_maps_to_unknown(value: object) -> None:
    assert acp_tool_kind(value) == "unknown"
