"""Pre-execute decisions and the approval seam (docs/behaviour.md#registry-pipeline B; scenarios 14–22)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import cast

import anyio
import pytest

from host.cancel import CancelController
from host.tools import ToolRegistry, ToolResult
from host.tools._types import (
    ApprovalOutcome,
    ApprovalRequest,
    ApprovalService,
    Ask,
    Deny,
    PreExecuteDecision,
    PreExecuteNext,
    ToolExecution,
)
from tests.tools._registry_helpers import (
    ABORTED_BEFORE_DISPATCH,
    HI,
    Phases,
    call,
    counted_body,
    error_json,
    instrument,
    make_tool,
    run_cancelling,
)

AGENT = object()


@dataclass
class _Approval(ApprovalService):
    """Answers with ``outcome`` once ``release`` is set; records every request."""

    outcome: object
    release: anyio.Event = field(default_factory=anyio.Event)
    requests: list[ApprovalRequest] = field(default_factory=lambda: [])
    asked: anyio.Event = field(default_factory=anyio.Event)

    async def request(self, request: ApprovalRequest, /) -> ApprovalOutcome:
        self.requests.append(request)
        self.asked.set()
        await self.release.wait()
        # The registry must cope with untyped services answering outside the closed set.
        return cast("ApprovalOutcome", self.outcome)


def _registry(approval: ApprovalService | None, decision: PreExecuteDecision) -> tuple[ToolRegistry, Phases]:
    registry = ToolRegistry(approval=approval)
    phases = Phases()
    registry.register(make_tool(body=counted_body(phases)))
    instrument(registry, phases)

    async def gate(_exec: ToolExecution, _next: PreExecuteNext) -> PreExecuteDecision:
        return decision

    registry.on_pre_execute(gate)
    return registry, phases


async def _execute(registry: ToolRegistry, controller: CancelController, agent: object | None = AGENT) -> ToolResult:
    with anyio.fail_after(5):
        return await registry.execute(call(controller.signal, agent=agent))


@pytest.mark.anyio
async def test_a_pre_execute_deny_fails_the_call_and_post_execute_still_runs() -> None:
    registry, phases = _registry(None, Deny("policy denied the call"))
    result = await _execute(registry, CancelController())
    assert result.to_json() == error_json("policy denied the call")
    assert phases.post == 1 and phases.body == 0 and phases.execute == 0


@pytest.mark.anyio
async def test_ask_without_an_approval_seam_is_denied_with_its_reason_or_the_default() -> None:
    with_reason, _ = _registry(None, Ask(reason="needs a human"))
    assert (await _execute(with_reason, CancelController())).to_json() == error_json("needs a human")
    without_reason, _ = _registry(None, Ask())
    assert (await _execute(without_reason, CancelController())).to_json() == error_json(
        'tool "t" requires approval (not yet supported)'
    )


@pytest.mark.anyio
async def test_allowed_once_dispatches_and_the_request_carries_the_callers_signal() -> None:
    approval = _Approval("allowed-once")
    approval.release.set()
    registry, phases = _registry(approval, Ask(reason="why"))
    controller = CancelController()
    result = await _execute(registry, controller)
    assert result.to_json() == HI
    assert phases.body == 1
    (request,) = approval.requests
    assert request.agent is AGENT
    assert request.tool_name == "t"
    assert request.call_id == "call-1"
    assert request.reason == "why"
    assert request.signal is controller.signal


@pytest.mark.parametrize(
    ("outcome", "message"),
    [
        ("rejected", 'the user rejected tool "t"'),
        ("cancelled", 'approval for tool "t" was cancelled'),
        ("unavailable", 'tool "t" requires approval, but no approval channel is available'),
    ],
)
@pytest.mark.anyio
async def test_approval_outcomes_other_than_allowed_once_become_exact_denials(outcome: str, message: str) -> None:
    approval = _Approval(outcome)
    approval.release.set()
    registry, phases = _registry(approval, Ask())
    assert (await _execute(registry, CancelController())).to_json() == error_json(message)
    assert phases.body == 0 and phases.post == 1


@pytest.mark.anyio
async def test_ask_without_an_agent_is_denied_and_approval_is_not_called() -> None:
    approval = _Approval("allowed-once")
    approval.release.set()
    registry, _ = _registry(approval, Ask())
    result = await _execute(registry, CancelController(), agent=None)
    assert result.to_json() == error_json('tool "t" requires approval, but the call has no agent to route it through')
    assert approval.requests == []


@pytest.mark.anyio
async def test_an_approval_outcome_outside_the_closed_set_is_a_final_error() -> None:
    approval = _Approval("maybe")
    approval.release.set()
    registry, phases = _registry(approval, Ask())
    result = await _execute(registry, CancelController())
    assert result.to_json() == error_json('unreachable variant in ApprovalOutcome: "maybe"')
    assert phases.post == 0 and phases.result == 1


async def _cancel_during_approval(outcome: str) -> tuple[ToolResult, Phases]:
    approval = _Approval(outcome)
    registry, phases = _registry(approval, Ask())
    result = await run_cancelling(registry, CancelController(), approval.asked, approval.release, agent=AGENT)
    return result, phases


@pytest.mark.anyio
async def test_cancel_while_approval_is_pending_then_allowed_once_aborts_before_dispatch() -> None:
    result, phases = await _cancel_during_approval("allowed-once")
    assert result.to_json() == ABORTED_BEFORE_DISPATCH
    assert phases.body == 0


@pytest.mark.anyio
async def test_cancel_then_approval_cancelled_aborts_before_dispatch_and_post_execute_runs() -> None:
    result, phases = await _cancel_during_approval("cancelled")
    assert result.to_json() == ABORTED_BEFORE_DISPATCH
    assert phases.post == 1


@pytest.mark.anyio
async def test_cancel_then_approval_rejected_keeps_the_denial() -> None:
    result, _ = await _cancel_during_approval("rejected")
    assert result.to_json() == error_json('the user rejected tool "t"')
