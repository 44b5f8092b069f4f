"""A child that splits an emoji between two chunks and sends two lone surrogates (``MOCK_SPLIT_SURROGATES``, as a
JavaScript agent slicing UTF-16 code units does): through ``serve``, on every transport and era, the official MCP
client gets the result and every progress notice as well-formed text (the pair joined, each lone half U+FFFD), so
its strict JSON reader (pydantic's, like Codex's serde) accepts them. Before, the stdio writer could not encode the
result and answered ``Internal error``; over HTTP the event stream broke."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import cast

import anyio
import mcp_types as types
import pytest

from tests.server._helpers import SERVE_TIMEOUT_S, acp_entry, write_config
from tests.server.test_structured_content_carries_the_text import calling, texts

pytestmark = pytest.mark.anyio

OUTPUT = "smile 😀, lone \ufffd <\ufffd> mock child answer"


@pytest.mark.parametrize("transport", ["stdio-handshake", "stdio-2026", "http-handshake", "http-2026"])
async def test_the_result_and_its_progress_are_well_formed_text(tmp_path: Path, transport: str) -> None:
    config = write_config(tmp_path, {"split": acp_entry(MOCK_SPLIT_SURROGATES="1")})
    notices: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        del progress, total
        notices.append(message or "")

    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with calling(transport, config) as (_version, call):
            # The official client's call_tool also takes the progress callback (the shared helper types only two).
            call_tool = cast(Callable[..., Awaitable[types.CallToolResult]], call)
            result = await call_tool("delegate_split", {"task": "t"}, progress_callback=on_progress)
    assert result.is_error is False, texts(result)
    assert texts(result) == [OUTPUT]
    assert result.structured_content is not None and result.structured_content["output"] == OUTPUT
    assert "".join(notices) == OUTPUT
    assert not any("\ud800" <= char <= "\udfff" for notice in notices for char in notice)
