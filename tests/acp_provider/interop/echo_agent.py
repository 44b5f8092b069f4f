"""A tiny echo agent built on the official ACP Python SDK (``agent-client-protocol``), for the interop scenario.

It answers each prompt with its concatenated text blocks as one ``agent_message_chunk``, then ``end_turn``.
Run as ``[sys.executable, this file]``; the SDK drives stdio on asyncio through ``anyio.run``.
"""

from __future__ import annotations

import uuid
from typing import Any, cast

import anyio
from acp import (
    Agent,
    Client,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    run_agent,
    update_agent_message_text,
)
from acp.schema import TextContentBlock


class EchoAgent:
    """Echo the prompt's text back to the client."""

    def __init__(self) -> None:
        self._client: Client | None = None

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    async def initialize(
        self, protocol_version: int, client_capabilities: Any = None, client_info: Any = None, **kwargs: Any
    ) -> InitializeResponse:
        return InitializeResponse(protocol_version=protocol_version)

    async def new_session(
        self, cwd: str, additional_directories: Any = None, mcp_servers: Any = None, **kwargs: Any
    ) -> NewSessionResponse:
        return NewSessionResponse(session_id=uuid.uuid4().hex)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = "".join(block.text for block in prompt if isinstance(block, TextContentBlock))
        assert self._client is not None
        await self._client.session_update(session_id=session_id, update=update_agent_message_text(text))
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None


async def main() -> None:
    await run_agent(cast(Agent, EchoAgent()))


if __name__ == "__main__":
    anyio.run(main)
