"""An entry without ``description`` is described to the model by its kind and its entry name, through ``serve``
and the official client: never by its command, which is often a wrapper (``prlimit``) or a path."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.server._helpers import SERVE_TIMEOUT_S, acp_entry, client_session, write_config

pytestmark = pytest.mark.anyio


async def test_the_default_description_names_the_entry_not_the_wrapper_command(tmp_path: Path) -> None:
    wrapped = {**acp_entry(), "command": "/usr/bin/prlimit", "args": ["--as=4000000000", "--", "agent"]}
    config = write_config(tmp_path, {"fast": wrapped})
    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with client_session(config) as session:
            listed = await session.list_tools()
    (tool,) = [tool for tool in listed.tools if tool.name == "delegate_fast"]
    assert str(tool.description).startswith(
        "Delegate a self-contained task to a fresh out-of-process ACP agent (fast) and return its final answer. "
        "The child does not see this conversation: put everything it needs in `task`. Set `run_in_background` to "
        "start a background job instead; read it with job_output and stop it with job_kill. Every result carries a "
        "`session_id`"
    )
    assert "prlimit" not in str(tool.description)
