"""The request, options and capability gate of ``host.run._contracts`` (docs/behaviour.md#results-request to
#results-capability-gate, acceptance 11)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pydantic
import pytest

from host._exceptions import UnsupportedCapabilityError
from host.cancel import CancelController
from host.run._contracts import AgentOptions, Capabilities, Provider, SubagentRequest, SubagentRun, check_capabilities
from host.stream import ProviderKind
from tests.diagnostics._helpers import ScriptedRun


@dataclass
class RecordingProvider:
    """A provider double that records whether ``start`` was reached."""

    name: str
    kind: ProviderKind
    capabilities: Capabilities
    started: list[SubagentRequest] = field(default_factory=list[SubagentRequest])

    async def start(self, request: SubagentRequest) -> SubagentRun:
        self.started.append(request)
        return ScriptedRun()


def request(agent_options: AgentOptions | None = None) -> SubagentRequest:
    return SubagentRequest(
        label="t",
        prompt=[{"type": "text", "text": "hi"}],
        signal=CancelController().signal,
        agent_options=agent_options,
    )


def test_acp_provider_rejects_agent_options_with_the_exact_capability_error() -> None:
    provider = RecordingProvider("acp", "acp", Capabilities(agent_options=False))
    gated: Provider = provider

    with pytest.raises(UnsupportedCapabilityError) as caught:
        check_capabilities(gated, request(AgentOptions(model="m")))

    assert caught.value.code == "UNSUPPORTED_CAPABILITY"
    assert str(caught.value) == 'subagent provider "acp" does not support the "agent_options" capability'
    assert provider.started == []


def test_requests_without_agent_options_pass_the_gate() -> None:
    check_capabilities(RecordingProvider("acp", "acp", Capabilities(agent_options=False)), request())


def test_sdk_provider_accepts_agent_options() -> None:
    provider = RecordingProvider("dsh-sdk", "dsh-sdk", Capabilities(agent_options=True))

    check_capabilities(provider, request(AgentOptions(provider="p", model="m", reasoning_effort="high", max_tokens=1)))


def test_agent_options_accept_the_full_max_tokens_range() -> None:
    assert AgentOptions(max_tokens=2**53 - 1).max_tokens == 2**53 - 1
    assert AgentOptions().model_dump(exclude_none=True) == {}


@pytest.mark.parametrize(
    "options",
    [
        {"max_tokens": True},
        {"max_tokens": 0},
        {"max_tokens": 2**53},
        {"max_tokens": 1.0},
        {"max_tokens": "5"},
        {"model": ""},
        {"provider": 7},
        {"reasoning_effort": ""},
        {"maxTokens": 5},
    ],
)
def test_agent_options_reject_invalid_values(options: dict[str, object]) -> None:
    with pytest.raises(pydantic.ValidationError):
        AgentOptions.model_validate(options)


def test_a_request_is_frozen_and_its_signal_is_required() -> None:
    req = request()
    name = "label"

    with pytest.raises(AttributeError):
        setattr(req, name, "other")
    without_signal: list[Any] = ["t", []]
    with pytest.raises(TypeError):
        SubagentRequest(*without_signal)
