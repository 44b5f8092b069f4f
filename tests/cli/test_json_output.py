"""``subagent-host run --json``: exactly one JSON object on stdout for every outcome, as a real subprocess.

The object of every ACP snapshot scenario (pinned in ``snapshots/acp/cli_*.json``), the built-in echo, DSH SDK
children whose text is odd (lone surrogates, deep nesting), and usage or configuration errors.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from tests.acp_provider.test_snapshots import SCENARIOS
from tests.cli._helpers import (
    CLI_TIMEOUT_S,
    acp_entry,
    adversarial_entry,
    json_of,
    one_json_object,
    run_adversarial,
    run_cli,
    write_config,
)
from tests.cli._helpers import SDK_OK as OK
from tests.cli._helpers import sdk_completed as completed
from tests.conftest import PYTHON
from tests.snapshots import assert_snapshot, snapshot_path

pytestmark = pytest.mark.anyio


def _scenario_config(tmp_path: Path, name: str) -> Path:
    policy, env = SCENARIOS[name]
    entry = acp_entry(**env)
    entry["permission"] = policy
    directory = tmp_path / name
    directory.mkdir()
    return write_config(directory, {"acp": entry})


async def test_json_object_of_every_acp_snapshot_scenario_is_the_result_plus_run_id_and_provider(
    tmp_path: Path,
) -> None:
    actual: dict[str, tuple[int, dict[str, Any]]] = {}
    hints: dict[str, list[str]] = {}
    causes: dict[str, str] = {}
    limiter = anyio.CapacityLimiter(4)

    async def one(name: str) -> None:
        config = _scenario_config(tmp_path, name)
        async with limiter:
            done = await run_cli("--config", str(config), "--json", "x", cwd=config.parent)
        obj = json_of(done.stdout)
        hints[name] = obj.pop("hints", [])
        causes[name] = obj.pop("cause")
        actual[name] = (done.returncode, obj)

    # Twenty-one CLI runs, each two interpreter cold starts, four at a time on a small CI box.
    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            for name in SCENARIOS:
                group.start_soon(one, name)
    expected: dict[str, tuple[int, dict[str, Any]]] = {}
    for name in SCENARIOS:
        result = json.loads(snapshot_path("acp", name).read_text(encoding="utf-8"))
        status = {"completed": 0, "refusal": 3, "max-tokens": 4}.get(result["stop_reason"], 1)
        expected[name] = (status, {"run_id": "<run_id>", "provider": "acp", **result})
    # The one scenario whose child reports usage (a usage_update of 1 of 10 context tokens) carries its totals.
    expected["extra-updates"][1]["usage"] = {"context_tokens": 1, "context_size": 10}
    assert actual == expected
    for name in SCENARIOS:
        # A denial under the reject policy names its fix; no other scenario has a host-side hint.
        denied = "policy: reject; request: " in actual[name][1].get("diagnostic", "") and "denied" in str(actual[name])
        assert bool(hints[name]) == denied, (name, hints[name])
        assert all("--permission allow" in hint for hint in hints[name])
    for name in SCENARIOS:
        assert_snapshot("acp", f"cli_{name}", actual[name][1])
    # The closed cause of each outcome (a denial that did not complete, a stop the child chose, or a failure).
    assert_snapshot("acp", "cli_causes", {name: causes[name] for name in SCENARIOS})


async def test_json_on_the_built_in_echo_provider_answers_with_the_task(tmp_path: Path) -> None:
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await run_cli("--json", "hello echo", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json_of(done.stdout) == {
        "run_id": "<run_id>",
        "provider": "echo",
        "stop_reason": "completed",
        "output": [{"type": "text", "text": "hello echo"}],
        "cause": "completed",
    }


# A minimal agent whose answer chunk holds a lone surrogate (valid JSON: "\ud800"), which UTF-8 cannot encode.
_SURROGATE_AGENT = r"""
import json, os, sys

for line in sys.stdin:
    message = json.loads(line)
    method, request_id = message.get("method"), message.get("id")
    if method == "initialize":
        result = {"protocolVersion": 1}
    elif method == "session/new":
        result = {"sessionId": "s"}
    elif method == "session/prompt":
        update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "a\ud800b"}}
        note = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": update}}
        os.write(1, (json.dumps(note) + "\n").encode())
        result = {"stopReason": "end_turn"}
    else:
        continue
    os.write(1, (json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}) + "\n").encode())
"""


async def test_a_lone_surrogate_in_the_child_output_still_prints_one_json_object(tmp_path: Path) -> None:
    script = tmp_path / "surrogate_agent.py"
    script.write_text(_SURROGATE_AGENT, encoding="utf-8")
    entry = acp_entry()
    entry["command"], entry["args"] = PYTHON, [str(script)]
    config = write_config(tmp_path, {"acp": entry})
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await run_cli("--config", str(config), "--json", "x", cwd=tmp_path)
    assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")
    data = json_of(done.stdout)
    assert data["stop_reason"] == "completed"
    assert data["output"] in ([{"type": "text", "text": "a\ud800b"}], [{"type": "text", "text": "a\ufffdb"}])
    assert done.returncode == 0


async def test_json_empty_task_is_a_usage_error_printed_as_one_json_object(tmp_path: Path) -> None:
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await run_cli("--json", "", cwd=tmp_path)
    assert done.returncode == 2
    # README: "With --json, stdout holds exactly one JSON object: ... a usage or config error: {"error": ...}".
    data = one_json_object(done.stdout)
    assert set(data) == {"error"} and isinstance(data["error"], str)


async def test_entries_whose_tool_names_collide_are_a_config_error_not_a_traceback(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"a-b": acp_entry(MOCK_TEXT="x"), "a_b": acp_entry(MOCK_TEXT="y")})
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await run_cli("--config", str(config), "--provider", "a-b", "--json", "x", cwd=tmp_path)
    assert b"Traceback" not in done.stderr, done.stderr.decode()[-2000:]
    assert done.returncode == 2
    data = one_json_object(done.stdout)
    assert set(data) == {"error"} and isinstance(data["error"], str)


async def test_moderately_nested_content_is_delivered_verbatim(tmp_path: Path) -> None:
    done = await run_adversarial(tmp_path, adversarial_entry(tmp_path, "", env={"ADV_DEEP": "40"}))
    assert done.returncode == 0, done.stderr
    output = json_of(done.stdout)["output"]
    value: object = output[1]["value"]
    for _ in range(40):
        assert isinstance(value, list)
        nested = cast(list[object], value)
        assert len(nested) == 1
        value = nested[0]
    assert output[0] == OK[0] and value == "bottom"


async def test_lone_surrogates_in_child_text_keep_stdout_one_valid_json_object(tmp_path: Path) -> None:
    done = await run_adversarial(tmp_path, adversarial_entry(tmp_path, "surrogates"))
    assert done.returncode == 0, done.stderr
    assert json_of(done.stdout) == completed([{"type": "text", "text": "ok lone \ud800 pair-half \ude00 end"}])
