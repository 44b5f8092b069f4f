"""Through ``serve`` and the official client: a delegation's ``structuredContent`` carries the run's usage totals
(checked numbers only), which the tool's ``outputSchema`` admits; a run whose child sent none has no ``usage``."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.server._helpers import SERVE_TIMEOUT_S, acp_entry, client_session, write_config

pytestmark = pytest.mark.anyio


async def test_structured_content_carries_usage(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        {"paid": acp_entry(MOCK_USAGE="1"), "hostile": acp_entry(MOCK_USAGE="hostile"), "plain": acp_entry()},
    )
    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with client_session(config, "--no-record") as session:
            paid = await session.call_tool("delegate_paid", {"task": "hi"})
            hostile = await session.call_tool("delegate_hostile", {"task": "hi"})
            plain = await session.call_tool("delegate_plain", {"task": "hi"})
    assert paid.is_error is False and paid.structured_content is not None
    assert paid.structured_content["usage"] == {
        "input_tokens": 1000,
        "output_tokens": 200,
        "context_tokens": 1200,
        "context_size": 200000,
        "cost": {"amount": 0.75, "currency": "USD"},
    }
    assert hostile.structured_content is not None and hostile.structured_content["usage"] == {"context_size": 100}
    assert plain.structured_content is not None and "usage" not in plain.structured_content
