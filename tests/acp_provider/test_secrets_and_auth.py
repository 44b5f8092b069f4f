"""Secrets never reach model-visible text; -32000 is ``auth-required`` (docs/behaviour.md#acp-never-visible,
#acp-auth-required, #acp-logging)."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest

from host._exceptions import AcpRunFailure
from host.acp_provider import AcpProvider
from tests.acp_provider._helpers import PROCESS_TIMEOUT_S, agent_entry, assert_no_secrets, make_request, task_group

CHILDREN = Path(__file__).resolve().parent / "children"
E = "subagent-acp: Subagent failure (provider: ACP; "
F = "Subagent failure (provider: ACP; "
RUN_FAILED = 'subagent-acp "acp": child run failed (error): '


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("initialize:-32603", E + "stage: initialize; category: transport)"),
        ("session/new:-32603", E + "stage: new-session; category: transport)"),
        ("initialize:-32000", E + "stage: initialize; category: auth-required)"),
        ("session/new:-32000", E + "stage: new-session; category: auth-required)"),
    ],
)
async def test_handshake_error_responses_raise_safe_messages_and_log_the_raw_text_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, mode: str, message: str
) -> None:
    caplog.set_level(logging.WARNING)
    entry = agent_entry(eof_grace_ms=1000, grace_ms=100, args=[str(CHILDREN / "error_agent.py"), mode])
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            provider = AcpProvider(entry, task_group=group)
            with pytest.raises(AcpRunFailure) as caught:
                await provider.start(make_request(parent_cwd=str(tmp_path)))
            await provider.aclose()
    assert str(caught.value) == message
    assert_no_secrets(str(caught.value))
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert lines == [RUN_FAILED + "SECRET_TOKEN at /private/path"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("code", "diagnostic"),
    [("-32603", F + "stage: prompt; category: transport)"), ("-32000", F + "stage: prompt; category: auth-required)")],
    ids=["internal-error", "auth-required"],
)
async def test_a_prompt_error_response_keeps_the_partial_output_and_a_safe_diagnostic(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, code: str, diagnostic: str
) -> None:
    caplog.set_level(logging.WARNING)
    entry = agent_entry(
        eof_grace_ms=1000, grace_ms=100, args=[str(CHILDREN / "error_agent.py"), f"session/prompt:{code}"]
    )
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with task_group() as group:
            provider = AcpProvider(entry, task_group=group)
            run = await provider.start(make_request(parent_cwd=str(tmp_path)))
            result = await run.result()
            await run.dispose()
            await provider.aclose()
    assert result.to_json() == {
        "output": [{"type": "text", "text": "partial"}],
        "diagnostic": diagnostic,
        "stop_reason": "error",
    }
    assert_no_secrets(result.diagnostic, str(result.output))
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert lines == [RUN_FAILED + "SECRET_TOKEN at /private/path"]
