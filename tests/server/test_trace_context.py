"""Through ``serve`` and the official client: a call's ``_meta.traceparent`` reaches the child (ACP ``_meta`` and
``TRACEPARENT``). Unconfigured, as given; with ``OTEL_TRACES_EXPORTER=console`` the run's ``invoke_agent`` span is in
that trace and the child gets the span's own context (the console exporter writes to the server's stderr while it
serves)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession
from mcp.client.stdio import stdio_client

from tests.server._helpers import SERVE_TIMEOUT_S, acp_entry, serve_params, write_config

pytestmark = pytest.mark.anyio

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


async def call_with_trace(tmp_path: Path, extra_env: dict[str, str]) -> tuple[str, dict[str, Any], str]:
    init_log = tmp_path / "init.log"
    config = write_config(tmp_path, {"tool": acp_entry(MOCK_RECORD_INIT=str(init_log), MOCK_ECHO_ENV="TRACEPARENT")})
    params = serve_params(config, "--no-record")
    params.env = {**{k: v for k, v in (params.env or {}).items() if not k.startswith("OTEL_")}, **extra_env}
    errlog_path = tmp_path / "serve.stderr"
    with anyio.fail_after(SERVE_TIMEOUT_S), errlog_path.open("w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("delegate_tool", {"task": "hi"}, meta={"traceparent": TRACEPARENT})
            if extra_env:
                # The batch processor exports on its timer (OTEL_BSP_SCHEDULE_DELAY): wait for it while serving.
                await until_exported(errlog_path)
    assert isinstance(result, types.CallToolResult)
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    initialize = json.loads(init_log.read_text().splitlines()[0])
    return block.text, initialize, errlog_path.read_text()


async def until_exported(errlog_path: Path) -> None:
    while True:
        if "invoke_agent tool" in await anyio.Path(errlog_path).read_text():
            return
        await anyio.sleep(0.05)


async def test_an_unconfigured_server_passes_the_callers_trace_context_to_the_child(tmp_path: Path) -> None:
    child_env, initialize, _ = await call_with_trace(tmp_path, {})
    assert child_env == TRACEPARENT
    assert initialize["_meta"] == {"traceparent": TRACEPARENT}


async def test_a_traced_server_puts_the_run_span_in_the_callers_trace(tmp_path: Path) -> None:
    traced = {"OTEL_TRACES_EXPORTER": "console", "OTEL_BSP_SCHEDULE_DELAY": "100"}
    child_env, initialize, stderr = await call_with_trace(tmp_path, traced)
    assert child_env.startswith(f"00-{TRACE_ID}-") and child_env != TRACEPARENT
    assert initialize["_meta"] == {"traceparent": child_env}
    span_id = child_env.split("-")[2]
    assert '"name": "invoke_agent tool"' in stderr
    assert f'"span_id": "0x{span_id}"' in stderr
    assert '"kind": "SpanKind.CLIENT"' in stderr
