"""Opt-in tracing: with a configured ``TracerProvider`` (the SDK's in-memory exporter), a run is an
``invoke_agent {entry}`` CLIENT span under the caller's ``traceparent``, with an ``execute_tool`` child per tool call
(its title only with content capture), usage attributes, ``error.type`` from the diagnostic, and the
``gen_ai.client.operation.duration`` metric; the child gets the span's own trace context in ``TRACEPARENT`` and ACP
``_meta``. Unconfigured, OpenTelemetry is never imported and the caller's trace context passes through unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.cli._helpers import acp_entry, cli_env, write_config
from tests.conftest import PYTHON

pytestmark = pytest.mark.anyio

TIMEOUT_S = 40
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{CALLER_SPAN}-01"


async def traced_run(tmp_path: Path, mode: str, *, capture: bool = False, **env: str) -> dict[str, Any]:
    init_log = tmp_path / "init.log"
    entry = acp_entry(MOCK_RECORD_INIT=str(init_log), MOCK_ECHO_ENV="TRACEPARENT", **env)
    config = write_config(tmp_path, {"tool": entry})
    child_env = cli_env()
    child_env = {k: v for k, v in child_env.items() if not k.startswith("OTEL_")}
    if capture:
        child_env["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
    with anyio.fail_after(TIMEOUT_S):
        done = await anyio.run_process(
            [PYTHON, "-m", "tests.telemetry._traced_host", str(config), "delegate_tool", TRACEPARENT, mode],
            cwd=tmp_path,
            env=child_env,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    report: dict[str, Any] = json.loads(done.stdout)
    report["initialize"] = [json.loads(line) for line in init_log.read_text().splitlines()] if init_log.exists() else []
    return report


def by_name(report: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    return [span for span in report["spans"] if span["name"].startswith(prefix)]


async def test_a_run_is_an_invoke_agent_client_span_under_the_callers_trace(tmp_path: Path) -> None:
    report = await traced_run(tmp_path, "memory", MOCK_USAGE="1", MOCK_TOOL_CALL="1")
    (run,) = by_name(report, "invoke_agent")
    (tool,) = by_name(report, "execute_tool")
    assert run["name"] == "invoke_agent tool" and run["kind"] == "CLIENT" and run["status"] == "UNSET"
    assert (run["trace_id"], run["parent_id"]) == (TRACE_ID, CALLER_SPAN)
    assert run["attributes"] == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "tool",
        "gen_ai.agent.name": "tool",
        "gen_ai.usage.input_tokens": 1000,
        "gen_ai.usage.output_tokens": 200,
        "subagent_host.usage.cost": 0.75,
        "subagent_host.usage.cost_currency": "USD",
        "gen_ai.response.finish_reasons": ["completed"],
    }
    # The tool span is the run's child and carries no content (no title, no call id) without capture.
    assert tool["name"] == "execute_tool" and tool["parent_id"] == run["span_id"] and tool["trace_id"] == TRACE_ID
    assert tool["attributes"] == {"gen_ai.operation.name": "execute_tool", "subagent_host.tool.kind": "read"}
    # The child got the run span's context: in its environment (the answer echoes it) and in initialize's _meta.
    child_traceparent = report["result"]["value"]["output"][0]["text"]
    assert child_traceparent.startswith(f"00-{TRACE_ID}-{run['span_id']}-")
    assert report["initialize"][0]["_meta"] == {"traceparent": child_traceparent}
    (point,) = [p for p in report["metrics"] if p["name"] == "gen_ai.client.operation.duration"]
    assert point["unit"] == "s" and point["count"] == 1
    assert point["attributes"] == {"gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "tool"}


async def test_content_capture_names_the_tool_span_after_its_title(tmp_path: Path) -> None:
    report = await traced_run(tmp_path, "memory", capture=True, MOCK_TOOL_CALL="1")
    (tool,) = by_name(report, "execute_tool")
    assert tool["name"] == "execute_tool mock tool"
    assert tool["attributes"]["gen_ai.tool.name"] == "mock tool"
    assert tool["attributes"]["gen_ai.tool.call.id"] == "mock-tool"


async def test_a_failed_run_sets_error_type_to_its_diagnostic_category(tmp_path: Path) -> None:
    report = await traced_run(tmp_path, "memory", MOCK_CRASH_ON_PROMPT="1")
    (run,) = by_name(report, "invoke_agent")
    message = report["result"]["error"]["message"]
    category = message.split("category: ")[1].split(")")[0].split(";")[0]
    assert run["status"] == "ERROR" and run["attributes"]["error.type"] == category
    (point,) = [p for p in report["metrics"] if p["name"] == "gen_ai.client.operation.duration"]
    assert point["attributes"]["error.type"] == category


async def test_unconfigured_imports_no_opentelemetry_and_passes_the_trace_through(tmp_path: Path) -> None:
    report = await traced_run(tmp_path, "none")
    assert report["otel_imported"] is False
    assert report["result"]["value"]["output"][0]["text"] == TRACEPARENT
    assert report["initialize"][0]["_meta"] == {"traceparent": TRACEPARENT}


async def test_an_invalid_traceparent_reaches_no_child(tmp_path: Path) -> None:
    init_log = tmp_path / "init.log"
    config = write_config(tmp_path, {"tool": acp_entry(MOCK_RECORD_INIT=str(init_log), MOCK_ECHO_ENV="TRACEPARENT")})
    with anyio.fail_after(TIMEOUT_S):
        done = await anyio.run_process(
            [PYTHON, "-m", "tests.telemetry._traced_host", str(config), "delegate_tool", "00-zz\x1b[31m-1", "none"],
            cwd=tmp_path,
            env={k: v for k, v in cli_env().items() if not k.startswith("OTEL_")},
            check=False,
        )
    report = json.loads(done.stdout)
    assert report["result"]["value"]["output"][0]["text"] == "<TRACEPARENT unset>"
    assert "_meta" not in json.loads(init_log.read_text().splitlines()[0])
