"""Audit gaps of issue 3 for ``subagent-host run``, driven as a real subprocess with configs in ``tmp_path``.

Covers the CLI ``--json`` object of every ACP snapshot scenario (and the exit status rule), ``--cwd``, text-mode
streaming, a repeated SIGINT, planted secrets on stdout, and a child string that is not encodable as UTF-8.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.acp_provider._helpers import wait_for_file
from tests.acp_provider.test_snapshots import SCENARIOS
from tests.cli._helpers import (
    CLI_TIMEOUT_S,
    acp_entry,
    assert_all_gone,
    descendants,
    json_of,
    run_cli,
    signal_twice,
    sigterm_trapping_config,
    start_cli,
    wait_for_ready_marker,
    write_config,
)
from tests.conftest import PYTHON
from tests.snapshots import assert_snapshot, snapshot_path

pytestmark = pytest.mark.anyio

ERROR_AGENT = Path(__file__).resolve().parents[1] / "acp_provider" / "children" / "error_agent.py"
SECRET_MARKERS = ("SECRET_TOKEN", "/private/path")
E = "subagent-acp: Subagent failure (provider: ACP; "
F = "Subagent failure (provider: ACP; "


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
    limiter = anyio.CapacityLimiter(4)

    async def one(name: str) -> None:
        config = _scenario_config(tmp_path, name)
        async with limiter:
            done = await run_cli("--config", str(config), "--json", "x", cwd=config.parent)
        obj = json_of(done.stdout)
        hints[name] = obj.pop("hints", [])
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
    assert actual == expected
    for name in SCENARIOS:
        # A denial under the reject policy names its fix; no other scenario has a host-side hint.
        denied = "policy: reject; request: " in actual[name][1].get("diagnostic", "") and "denied" in str(actual[name])
        assert bool(hints[name]) == denied, (name, hints[name])
        assert all("--permission allow" in hint for hint in hints[name])
    for name in SCENARIOS:
        assert_snapshot("acp", f"cli_{name}", actual[name][1])


async def test_cwd_option_is_the_child_workspace_and_defaults_to_the_current_directory(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    config = write_config(tmp_path, {"acp": acp_entry(MOCK_ECHO_CWD="1")})
    with anyio.fail_after(CLI_TIMEOUT_S):
        explicit = await run_cli("--config", str(config), "--cwd", str(workspace), "--json", "x", cwd=tmp_path)
        default = await run_cli("--config", str(config), "--json", "x", cwd=tmp_path)
        real_workspace, real_tmp = await anyio.Path(workspace).resolve(), await anyio.Path(tmp_path).resolve()
    assert json_of(explicit.stdout)["output"] == [{"type": "text", "text": f"{real_workspace}\n{workspace}"}]
    assert json_of(default.stdout)["output"] == [{"type": "text", "text": f"{real_tmp}\n{tmp_path}"}]


async def test_json_on_the_built_in_echo_provider_answers_with_the_task(tmp_path: Path) -> None:
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await run_cli("--json", "hello echo", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json_of(done.stdout) == {
        "run_id": "<run_id>",
        "provider": "echo",
        "stop_reason": "completed",
        "output": [{"type": "text", "text": "hello echo"}],
    }


async def test_text_mode_streams_the_output_before_the_run_ends(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    config = write_config(tmp_path, {"acp": acp_entry(MOCK_HANG="1", MOCK_TEXT="partial", MOCK_READY_FILE=str(ready))})
    streamed = b""
    with anyio.fail_after(CLI_TIMEOUT_S):
        async with await start_cli("--config", str(config), "x", cwd=tmp_path) as process:
            assert process.stdout is not None and process.stderr is not None
            # The child hangs after its chunk: the text can only be here because it streamed.
            while b"partial" not in streamed:
                streamed += await process.stdout.receive()
            process.send_signal(signal.SIGINT)
            async for data in process.stdout:
                streamed += data
            stderr = b"".join([data async for data in process.stderr])
            returncode = await process.wait()
    assert returncode == 130
    assert streamed == b"partial\n"
    assert "subagent run was cancelled" in stderr.decode()


async def test_a_second_sigint_during_teardown_of_a_sigterm_trapping_child_still_kills_it(tmp_path: Path) -> None:
    config, ready = sigterm_trapping_config(tmp_path)
    with anyio.fail_after(CLI_TIMEOUT_S):
        async with await start_cli("--config", str(config), "--json", "x", cwd=tmp_path) as process:
            await wait_for_ready_marker(ready)
            children = descendants(process.pid)
            line, returncode = await signal_twice(process, signal.SIGINT)
    assert returncode == 130
    assert json_of(line) == {
        "run_id": "<run_id>",
        "provider": "acp",
        "stop_reason": "aborted",
        "output": [{"type": "text", "text": "partial"}],
    }
    assert children
    assert_all_gone(children)


@pytest.mark.parametrize(
    ("mode", "expected", "status"),
    [
        (
            "session/prompt:-32000",
            {
                "run_id": "<run_id>",
                "provider": "acp",
                "stop_reason": "error",
                "output": [{"type": "text", "text": "partial"}],
                "diagnostic": F + "stage: prompt; category: auth-required)",
            },
            1,
        ),
        (
            "session/prompt:-32603",
            {
                "run_id": "<run_id>",
                "provider": "acp",
                "stop_reason": "error",
                "output": [{"type": "text", "text": "partial"}],
                "diagnostic": F + "stage: prompt; category: transport)",
            },
            1,
        ),
        ("initialize:-32000", {"provider": "acp", "error": E + "stage: initialize; category: auth-required)"}, 1),
        ("session/new:-32603", {"provider": "acp", "error": E + "stage: new-session; category: transport)"}, 1),
    ],
)
async def test_secrets_in_child_stderr_and_error_payloads_never_reach_json_stdout(
    tmp_path: Path, mode: str, expected: dict[str, Any], status: int
) -> None:
    entry = acp_entry()
    entry["args"] = [str(ERROR_AGENT), mode]
    config = write_config(tmp_path, {"acp": entry})
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await run_cli("--config", str(config), "--json", "x", cwd=tmp_path)
    stdout = done.stdout.decode()
    for marker in SECRET_MARKERS:
        assert marker not in stdout
    assert json_of(done.stdout) == expected
    assert done.returncode == status


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


async def test_a_second_sigint_after_a_startup_abort_still_exits_130(tmp_path: Path) -> None:
    ready, go = tmp_path / "ready", tmp_path / "go"
    config = write_config(tmp_path, {"acp": acp_entry(MOCK_NEWSESSION_READY=str(ready), MOCK_NEWSESSION_GO=str(go))})
    with anyio.fail_after(CLI_TIMEOUT_S):
        async with await start_cli("--config", str(config), "--json", "x", cwd=tmp_path) as process:
            # The agent is parked in `session/new` (its GO file never appears): the run is still starting.
            await wait_for_file(ready)
            children = descendants(process.pid)
            line, returncode = await signal_twice(process, signal.SIGINT)
    assert json_of(line) == {"provider": "acp", "error": "subagent request was aborted before the ACP child started"}
    assert returncode == 130
    assert children
    assert_all_gone(children)
