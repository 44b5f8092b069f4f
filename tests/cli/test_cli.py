"""``subagent-host run`` as a real subprocess (``python -m host``) with configs in ``tmp_path``.

``--json`` outputs are pinned in ``snapshots/cli/`` with the random ``run_id`` normalized to a placeholder.
"""

from __future__ import annotations

import signal
from pathlib import Path

import anyio
import pytest

from tests.acp_provider._helpers import wait_for_file
from tests.cli._helpers import (
    CLI_TIMEOUT_S,
    CONSOLE_SCRIPT,
    acp_entry,
    assert_all_gone,
    cli_env,
    descendants,
    json_of,
    read_line,
    run_cli,
    signal_twice,
    sigterm_trapping_config,
    start_cli,
    wait_for_ready_marker,
    write_config,
)
from tests.snapshots import assert_snapshot

pytestmark = pytest.mark.anyio


async def test_default_echo_provider_prints_the_task(tmp_path: Path) -> None:
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await run_cli("hello", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == "hello\n"


async def test_the_installed_built_in_echo_ignores_mock_and_fake_switches_in_the_host_environment(
    tmp_path: Path,
) -> None:
    # Through the installed console script: the built-in echo is the package's own agent, not the scripted fake.
    switches = {"MOCK_SERVER_URL": "x", "MOCK_TEXT": "scripted", "MOCK_CRASH_ON_PROMPT": "1", "FAKE_TEXT": "scripted"}
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await anyio.run_process(
            [CONSOLE_SCRIPT, "run", "hello"], cwd=tmp_path, env={**cli_env(), **switches}, check=False
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == "hello\n"


async def test_json_completed_run_prints_one_object(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"acp": acp_entry(MOCK_TEXT="mock child answer")})
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await run_cli("--config", str(config), "--json", "x", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    data = json_of(done.stdout)
    assert data == {
        "run_id": "<run_id>",
        "provider": "acp",
        "stop_reason": "completed",
        "output": [{"type": "text", "text": "mock child answer"}],
        "cause": "completed",
    }
    assert_snapshot("cli", "completed", data)


async def test_json_error_run_carries_the_diagnostic_and_exits_1(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"acp": acp_entry(MOCK_TEXT="partial", MOCK_STOP="max_turn_requests")})
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await run_cli("--config", str(config), "--json", "x", cwd=tmp_path)
    assert done.returncode == 1
    data = json_of(done.stdout)
    assert data["stop_reason"] == "error"
    assert data["diagnostic"] == (
        "Subagent failure (provider: ACP; stage: prompt; category: remote-limit; stop reason: max_turn_requests)"
    )
    assert_snapshot("cli", "error_with_diagnostic", data)


async def test_text_mode_failure_goes_to_stderr_and_output_to_stdout(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"acp": acp_entry(MOCK_TEXT="partial", MOCK_STOP="max_turn_requests")})
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await run_cli("--config", str(config), "x", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.decode() == "partial\n"
    assert done.stderr.decode().startswith(
        "subagent run failed\nDiagnostic: Subagent failure (provider: ACP; stage: prompt; category: remote-limit"
    )


async def test_json_startup_rejection_prints_the_safe_message(tmp_path: Path) -> None:
    entry = acp_entry()
    entry["command"] = "/nonexistent/acp-agent-binary"
    config = write_config(tmp_path, {"acp": entry})
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await run_cli("--config", str(config), "--json", "x", cwd=tmp_path)
    assert done.returncode == 1
    data = json_of(done.stdout)
    assert data == {
        "run_id": "<run_id>",  # a start that failed is a recorded run
        "provider": "acp",
        "error": "subagent-acp: Subagent failure (provider: ACP; stage: process; category: process-start)",
        "cause": "failed",
        "hints": [
            "/nonexistent/acp-agent-binary does not exist "
            "(a command with a slash resolves against the config file's directory)"
        ],
    }
    assert_snapshot("cli", "startup_rejection", data)


async def test_json_timeout_prints_the_aborted_run_with_tool_timeout_and_exits_124(tmp_path: Path) -> None:
    entry = acp_entry(MOCK_HANG="1", MOCK_TEXT="partial")
    entry["timeout_ms"] = 3000
    config = write_config(tmp_path, {"acp": entry})
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await run_cli("--config", str(config), "--json", "x", cwd=tmp_path)
    assert done.returncode == 124
    data = json_of(done.stdout)
    assert data == {
        "run_id": "<run_id>",
        "provider": "acp",
        "stop_reason": "aborted",
        "output": [{"type": "text", "text": "partial"}],
        "error_code": "TOOL_TIMEOUT",
        "error": "tool call timed out after 3000ms",
        "cause": "timeout",
        "hints": ["providers.acp timeout_ms = 3000; raise it or pass --timeout-ms N"],
    }
    assert_snapshot("cli", "tool_timeout", data)


async def test_provider_option_selects_the_entry(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"one": acp_entry(MOCK_TEXT="from one"), "two": acp_entry(MOCK_TEXT="from two")})
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await run_cli("--config", str(config), "--provider", "two", "x", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == "from two\n"


async def test_unknown_provider_is_a_usage_error(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"acp": acp_entry()})
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await run_cli("--config", str(config), "--provider", "nope", "--json", "x", cwd=tmp_path)
    assert done.returncode == 2
    message = 'subagent-host: unknown provider "nope" (configured: acp)'
    assert done.stderr.decode() == message + "\n"
    assert json_of(done.stdout) == {"error": message}
    assert_snapshot("cli", "unknown_provider", json_of(done.stdout))


async def test_bad_config_key_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    entry = acp_entry()
    entry["dispose_grace"] = 5
    config = write_config(tmp_path, {"acp": entry})
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await run_cli("--config", str(config), "--json", "x", cwd=tmp_path)
    assert done.returncode == 2
    # The spec's exact message, then which entry of which file it is about.
    message = f'subagent-acp: unknown config key "dispose_grace" (providers.acp in {config})'
    assert done.stderr.decode() == message + "\n"
    data = json_of(done.stdout)
    assert data == {"error": message}
    assert_snapshot("cli", "config_error", {"error": message.replace(str(config), "<config>")})


async def test_help_documents_every_exit_status(tmp_path: Path) -> None:
    with anyio.fail_after(CLI_TIMEOUT_S):
        done = await run_cli("--help", cwd=tmp_path)
    assert done.returncode == 0
    text = done.stdout.decode()
    for code in ("0 ", "1 ", "2 ", "124", "130", "143"):
        assert f"\n  {code}" in text


@pytest.mark.parametrize(("sent", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
async def test_signal_during_a_hanging_run_prints_the_aborted_result_and_leaves_no_survivor(
    tmp_path: Path, sent: signal.Signals, status: int
) -> None:
    ready = tmp_path / "ready"
    config = write_config(tmp_path, {"acp": acp_entry(MOCK_HANG="1", MOCK_TEXT="partial", MOCK_READY_FILE=str(ready))})
    with anyio.fail_after(CLI_TIMEOUT_S):
        async with await start_cli("--config", str(config), "--json", "x", cwd=tmp_path) as process:
            await wait_for_file(ready)
            children = descendants(process.pid)
            assert children
            process.send_signal(sent)
            line = await read_line(process)
            returncode = await process.wait()
    assert returncode == status
    data = json_of(line)
    assert data == {
        "run_id": "<run_id>",
        "provider": "acp",
        "stop_reason": "aborted",
        "output": [{"type": "text", "text": "partial"}],
        "cause": "cancelled",
    }
    assert_all_gone(children)
    assert_snapshot("cli", "interrupted", data)


async def test_second_sigint_during_teardown_of_a_sigterm_trapping_child_still_kills_it(tmp_path: Path) -> None:
    config, ready = sigterm_trapping_config(tmp_path)
    with anyio.fail_after(CLI_TIMEOUT_S):
        async with await start_cli("--config", str(config), "--json", "x", cwd=tmp_path) as process:
            await wait_for_ready_marker(ready)
            children = descendants(process.pid)
            line, returncode = await signal_twice(process, signal.SIGTERM)
    assert returncode == 143
    assert json_of(line)["stop_reason"] == "aborted"
    assert_all_gone(children)


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
