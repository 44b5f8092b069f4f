"""The closed mapping tables and lenient extraction of the ACP provider (docs/behaviour.md#acp-acceptance)."""

from __future__ import annotations

import pytest

from host.acp_provider._wire import (
    choose_permission,
    map_stop_reason,
    prompt_text_blocks,
    session_id_of,
    tool_kind_of,
)
from host.diagnostics import AcpFailureFacts, PermissionDecision, acp_diagnostic, acp_failure_line

TOOL_KINDS = ["read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"]


@pytest.mark.parametrize(
    ("wire", "shared"),
    [
        ("end_turn", "completed"),
        ("max_tokens", "max-tokens"),
        ("refusal", "refusal"),
        ("cancelled", "aborted"),
        ("max_turn_requests", "error"),
    ],
)
def test_stop_table_maps_each_acp_stop_reason(wire: str, shared: str) -> None:
    assert map_stop_reason({"stopReason": wire})[0] == shared


def test_only_max_turn_requests_carries_a_stop_reason_fact_among_known_values() -> None:
    assert map_stop_reason({"stopReason": "max_turn_requests"}) == ("error", "max_turn_requests")
    assert map_stop_reason({"stopReason": "end_turn"}) == ("completed", None)


@pytest.mark.parametrize("result", [{"stopReason": "something-new"}, {}, {"stopReason": 7}, None, [], "end_turn"])
def test_unknown_missing_or_non_string_stop_reasons_are_error_with_unknown_fact(result: object) -> None:
    assert map_stop_reason(result) == ("error", "unknown")


def test_prompt_translation_keeps_text_blocks_in_order_and_drops_the_rest() -> None:
    prompt: list[dict[str, object]] = [
        {"type": "text", "text": "a"},
        {"type": "reasoning", "text": "hidden"},
        {"type": "image", "data": "AAAA", "mimeType": "image/png"},
        {"type": "text", "text": "b", "extra": 1},
    ]
    assert prompt_text_blocks(prompt) == [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    assert prompt_text_blocks([{"type": "image", "data": "AAAA", "mimeType": "image/png"}]) == []


@pytest.mark.parametrize("kind", TOOL_KINDS)
def test_each_closed_tool_kind_maps_to_itself(kind: str) -> None:
    assert tool_kind_of({"toolCall": {"toolCallId": "x", "kind": kind}}) == kind


@pytest.mark.parametrize(
    "params",
    [
        {"toolCall": {"toolCallId": "x", "kind": None}},
        {"toolCall": {"toolCallId": "x"}},
        {"toolCall": {"toolCallId": "x", "kind": "future_kind"}},
        {"toolCall": {"toolCallId": "x", "kind": 7}},
        {},
    ],
    ids=["null", "missing", "future", "number", "no-tool-call"],
)
def test_any_other_tool_kind_is_unknown(params: dict[str, object]) -> None:
    assert tool_kind_of(params) == "unknown"


def test_failure_text_prints_exit_code_zero_then_signal_and_joins_the_decision_with_a_newline() -> None:
    assert acp_failure_line(AcpFailureFacts("process", "process-exit", exit_code=0)) == (
        "Subagent failure (provider: ACP; stage: process; category: process-exit; exit code: 0)"
    )
    both = AcpFailureFacts("process", "process-exit", exit_code=3, signal="SIGKILL")
    assert acp_failure_line(both).endswith("; exit code: 3; signal: SIGKILL)")
    decision = PermissionDecision("reject", "edit", "denied")
    assert acp_diagnostic(both, decision) == (
        acp_failure_line(both) + "\nACP unattended decision (policy: reject; request: edit; decision: denied)"
    )


def test_allow_policy_picks_the_first_allow_option_in_offered_order() -> None:
    params: dict[str, object] = {
        "toolCall": {"toolCallId": "t", "kind": "edit", "title": "secret title"},
        "options": [
            {"optionId": "no", "name": "Reject", "kind": "reject_once"},
            {"optionId": 5, "name": "Bad id", "kind": "allow_once"},
            {"optionId": "always", "name": "Always", "kind": "allow_always"},
            {"optionId": "once", "name": "Once", "kind": "allow_once"},
        ],
    }
    choice = choose_permission("allow", params)
    assert choice.answer == {"outcome": {"outcome": "selected", "optionId": "always"}}
    assert choice.decision == PermissionDecision("allow", "edit", "allowed")


def test_reject_policy_never_selects_an_option() -> None:
    params: dict[str, object] = {"options": [{"optionId": "yes", "name": "Allow", "kind": "allow_once"}]}
    choice = choose_permission("reject", params)
    assert choice.answer == {"outcome": {"outcome": "cancelled"}}
    assert choice.decision == PermissionDecision("reject", "unknown", "denied")


def test_allow_policy_with_malformed_options_denies() -> None:
    choice = choose_permission("allow", {"options": "not-a-list"})
    assert choice.answer == {"outcome": {"outcome": "cancelled"}}
    assert choice.decision.decision == "denied"


def test_session_id_must_be_a_string() -> None:
    assert session_id_of({"sessionId": "s"}) == "s"
    assert session_id_of({"sessionId": 1}) is None
    assert session_id_of({}) is None
    assert session_id_of(None) is None
