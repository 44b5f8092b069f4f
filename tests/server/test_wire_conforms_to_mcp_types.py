"""Every message ``serve`` writes, in both protocol eras, validates against the official ``mcp_types`` models of its
revision (the envelope, each result for its method, each notification), as the ACP wire is held against
``agent-client-protocol``; and on the raw wire an error result, a background start and a timeout carry their text in
``structuredContent``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from mcp_types import methods

from tests.server._helpers import SERVE_TIMEOUT_S, RawServer, acp_entry, write_config

pytestmark = pytest.mark.anyio

_MODERN = "2026-07-28"
_ENVELOPE: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": _MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
}


def config_of(tmp_path: Path) -> Path:
    return write_config(
        tmp_path,
        {
            "echo": acp_entry(),
            "refuse": acp_entry(MOCK_STOP="refusal", MOCK_TEXT="no"),
            "slow": {**acp_entry(MOCK_HANG="1"), "timeout_ms": 200},
        },
    )


def calls(modern: bool) -> list[tuple[str, dict[str, Any]]]:
    """``(method, params)`` of every request the product handles, in order."""
    progress = {"progressToken": "p1"}
    requests: list[tuple[str, dict[str, Any]]] = [
        ("tools/list", {}),
        ("tools/call", {"name": "delegate_echo", "arguments": {"task": "hi"}, "_meta": progress}),
        ("tools/call", {"name": "delegate_refuse", "arguments": {"task": "x"}}),
        ("tools/call", {"name": "delegate_slow", "arguments": {"task": "x"}}),
        ("tools/call", {"name": "delegate_echo", "arguments": {"task": "bg", "run_in_background": True}}),
        ("tools/call", {"name": "job_output", "arguments": {"job_id": "subagent-1", "wait": True}}),
        ("tools/call", {"name": "job_list", "arguments": {}}),
        ("tools/call", {"name": "no_such_tool", "arguments": {}}),
        ("no/such/method", {}),
    ]
    if modern:
        requests.insert(0, ("server/discover", {}))
        return [(method, {**params, "_meta": {**_ENVELOPE, **params.get("_meta", {})}}) for method, params in requests]
    return [("ping", {}), ("logging/setLevel", {"level": "debug"}), *requests]


@pytest.mark.parametrize("era", ["handshake", "2026-07-28"])
async def test_every_message_validates_against_mcp_types_of_its_revision(tmp_path: Path, era: str) -> None:
    modern = era == _MODERN
    sent: dict[object, str] = {}
    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with RawServer.open(config_of(tmp_path)) as server:
            version = _MODERN if modern else (await server.initialize())["result"]["protocolVersion"]
            for number, (method, params) in enumerate(calls(modern), start=1):
                sent[number] = method
                await server.request(number, method, params)
                await server.response_to(number)
            await server.close_stdin()
            assert await server.process.wait() == 0
    results: dict[object, dict[str, Any]] = {}
    for line in server.lines:
        mcp_types.jsonrpc_message_adapter.validate_python(line, by_name=False)
        if "method" in line:
            methods.parse_server_notification(line["method"], version, line.get("params"))
        elif "result" in line and line["id"] != "init":
            method = sent[line["id"]]
            methods.parse_server_result(method, version, line["result"])
            # Nothing we send is outside the revision's schema (the surface dump drops unknown fields).
            assert methods.serialize_server_result(method, version, line["result"]) == line["result"]
            results[line["id"]] = line["result"]
        elif "error" in line:
            assert line["error"]["code"] == -32601 and sent[line["id"]] == "no/such/method"
    progress = [line for line in server.lines if line.get("method") == "notifications/progress"]
    assert progress and all(line["params"]["progressToken"] == "p1" for line in progress)
    structured = [result.get("structuredContent") for result in results.values()]
    assert {
        "provider": "refuse",
        "error": "Error: subagent declined the task\nPartial output before the run ended:\nno",
    }.items() <= next(s for s in structured if s and s["provider"] == "refuse").items()
    assert any(s and s.get("error") == "Error: tool call timed out after 200ms" for s in structured)
    assert any(s and s.get("output") == "started background subagent job subagent-1" for s in structured)
