"""``subagent-host run --json`` for ``kind = "dsh-sdk"`` entries, as a real subprocess on the real fake runtime.

The DSH SDK command line: the same JSON contract and SIGINT behaviour as ACP; planted secrets (stderr, JSON-RPC error
payloads, the child's ``LlmFailure`` message) never reach stdout.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from tests.cli._helpers import (
    CLI_TIMEOUT_S,
    json_of,
    read_line,
    run_cli,
    start_cli,
    without_stderr_tail,
    write_config,
)
from tests.conftest import FAKE_DSH_RUNTIME, PYTHON, REPO_ROOT
from tests.sdk_provider._helpers import pid_alive, wait_for_file
from tests.snapshots import assert_snapshot

pytestmark = pytest.mark.anyio

SECRETS = ("SECRET_TOKEN", "/private/path")
D_INIT_PROTOCOL = "Subagent failure (provider: DSH SDK; stage: initialize; category: protocol)"

# The fake runtime, plus: after a FAKE_HANG_AFTER_CHUNK prompt, a round trip through the host's reader (a probe
# request, answered -32601 in order after the chunk and the prompt result) before the ready file appears, so the
# host has routed the chunk by then. With AUDIT_SECRET_FAILURES, the child's error reason and every JSON-RPC error
# it sends carry planted secrets.
_PATCHED_FAKE = f"""
import os, sys
sys.path.insert(0, {str(REPO_ROOT)!r})
import fake_runtimes.dsh_runtime as rt

SECRET = "LlmFailure at /private/path SECRET_TOKEN"
Runtime = rt._FakeRuntime

if os.environ.get("AUDIT_READY_FILE"):
    original_prompt = Runtime._prompt
    def prompt_then_ready(self, request_id, params):
        original_prompt(self, request_id, params)
        self._probe("audit/ready")
        path = os.environ["AUDIT_READY_FILE"]
        with open(path + ".tmp", "w", encoding="utf-8") as file:
            file.write("ready\\n")
        os.replace(path + ".tmp", path)
    setattr(Runtime, "_prompt", prompt_then_ready)

if os.environ.get("AUDIT_SECRET_FAILURES"):
    original_reason = rt._reason
    def secret_reason(kind, malformed):
        if kind == "error" and malformed is None:
            return {{"kind": "error", "error": {{"message": SECRET, "code": "SECRET_TOKEN"}}}}
        return original_reason(kind, malformed)
    rt._reason = secret_reason
    original_error = Runtime._error
    def secret_error(self, request_id, error):
        original_error(self, request_id, dict(error, message=SECRET, data={{"where": SECRET}}))
    setattr(Runtime, "_error", secret_error)

rt.main()
"""


def sdk_entry(args: list[str] | None = None, **env: str) -> dict[str, Any]:
    """A ``dsh-sdk`` entry on the fake runtime with the spec's fast-teardown settings
    (docs/behaviour.md#sdk-test-seams)."""
    return {
        "kind": "dsh-sdk",
        "command": PYTHON,
        "args": args if args is not None else [str(FAKE_DSH_RUNTIME)],
        "shutdown_timeout_ms": 100,
        "dispose_eof_grace_ms": 200,
        "dispose_grace_ms": 200,
        "env": env,
    }


def write_sdk_config(tmp_path: Path, entry: dict[str, Any], name: str = "dsh-sdk") -> Path:
    return write_config(tmp_path, {name: entry})


def patched_fake(tmp_path: Path) -> list[str]:
    path = tmp_path / "patched_runtime.py"
    path.write_text(_PATCHED_FAKE, encoding="utf-8")
    return [str(path)]


def assert_secret_free(text: str) -> None:
    for marker in SECRETS:
        assert marker not in text, f"{marker!r} leaked into {text!r}"


async def run_json(tmp_path: Path, entry: dict[str, Any]) -> subprocess.CompletedProcess[bytes]:
    config = write_sdk_config(tmp_path, entry)
    with anyio.fail_after(CLI_TIMEOUT_S):
        return await run_cli("--config", str(config), "--json", "do the task", cwd=tmp_path)


async def test_json_completed_sdk_run_prints_one_object_and_exits_0(tmp_path: Path) -> None:
    done = await run_json(tmp_path, sdk_entry(FAKE_TEXT="hello from sdk child"))
    assert done.returncode == 0, done.stderr
    data = json_of(done.stdout)
    assert data == {
        "run_id": "<run_id>",
        "provider": "dsh-sdk",
        "stop_reason": "completed",
        "output": [{"type": "text", "text": "hello from sdk child"}],
        "cause": "completed",
    }
    assert_snapshot("sdk", "cli_completed", data)


async def test_json_without_switches_echoes_the_task(tmp_path: Path) -> None:
    done = await run_json(tmp_path, sdk_entry())
    assert done.returncode == 0, done.stderr
    assert json_of(done.stdout)["output"] == [{"type": "text", "text": "do the task"}]


async def test_json_child_error_carries_the_diagnostic_and_partial_output_and_exits_1(tmp_path: Path) -> None:
    done = await run_json(tmp_path, sdk_entry(FAKE_REASON_KIND="error", FAKE_TEXT="partial answer"))
    assert done.returncode == 1
    data = without_stderr_tail(json_of(done.stdout))
    assert data == {
        "run_id": "<run_id>",
        "provider": "dsh-sdk",
        "stop_reason": "error",
        "output": [{"type": "text", "text": "partial answer"}],
        "diagnostic": "Subagent failure (provider: DSH SDK; stage: session-run; category: child-error)",
        "cause": "failed",
    }
    assert_snapshot("sdk", "cli_child_error", data)


async def test_json_startup_rejection_prints_the_safe_message_without_stderr_secrets(tmp_path: Path) -> None:
    entry = sdk_entry(FAKE_EXIT_BEFORE_INIT="1", FAKE_STDERR="scripted boot failure at /private/path SECRET_TOKEN")
    done = await run_json(tmp_path, entry)
    assert done.returncode == 1
    data = json_of(done.stdout)
    # The runtime's own stderr reaches only the operator's copy of it, `stderr_tail` (never the error or a hint).
    assert any("scripted boot failure" in line for line in data["stderr_tail"])
    data = without_stderr_tail(data)
    assert data == {
        "run_id": "<run_id>",
        "provider": "dsh-sdk",
        "error": "subagent-dsh-sdk: Subagent failure (provider: DSH SDK; stage: initialize; category: transport)",
        "cause": "failed",
    }
    assert_secret_free(json.dumps(data))
    assert_snapshot("sdk", "cli_startup_rejection", data)


async def test_json_timeout_prints_the_aborted_run_with_tool_timeout_and_exits_124(tmp_path: Path) -> None:
    entry = sdk_entry(FAKE_HANG_PROMPT="1")
    entry["timeout_ms"] = 300
    done = await run_json(tmp_path, entry)
    assert done.returncode == 124
    data = without_stderr_tail(json_of(done.stdout))
    assert data == {
        "run_id": "<run_id>",
        "provider": "dsh-sdk",
        "stop_reason": "aborted",
        "output": [],
        "error_code": "TOOL_TIMEOUT",
        "error": "tool call timed out after 300ms",
        "cause": "timeout",
        "hints": ["providers.dsh-sdk timeout_ms = 300; raise it or pass --timeout-ms N"],
    }
    assert_snapshot("sdk", "cli_tool_timeout", data)


async def test_json_bad_sdk_key_is_a_config_error_naming_the_key(tmp_path: Path) -> None:
    entry = sdk_entry()
    entry["dshHome"] = "/opt/dsh"
    done = await run_json(tmp_path, entry)
    assert done.returncode == 2
    config = tmp_path / "subagent-host.toml"
    message = f'subagent-dsh-sdk: unknown config key "dshHome" (providers.dsh-sdk in {config})'
    assert done.stderr.decode() == message + "\n"
    data = json_of(done.stdout)
    assert data == {"error": message}
    assert_snapshot("sdk", "cli_config_error", {"error": message.replace(str(config), "<config>")})


@pytest.mark.parametrize(
    ("switches", "expected"),
    [
        (
            {"FAKE_REASON_KIND": "error", "FAKE_STDERR": "stderr /private/path SECRET_TOKEN"},
            {
                "run_id": "<run_id>",
                "provider": "dsh-sdk",
                "stop_reason": "error",
                "output": [{"type": "text", "text": "hello from fake runtime"}],
                "diagnostic": "Subagent failure (provider: DSH SDK; stage: session-run; category: child-error)",
                "cause": "failed",
            },
        ),
        (
            {"FAKE_PROMPT_ERROR": "1"},
            {
                "run_id": "<run_id>",
                "provider": "dsh-sdk",
                "stop_reason": "error",
                "output": [],
                "diagnostic": "Subagent failure (provider: DSH SDK; stage: session-run; category: protocol)",
                "cause": "failed",
            },
        ),
        (
            {"FAKE_INIT_ERROR": "1"},
            {
                "run_id": "<run_id>",
                "provider": "dsh-sdk",
                "error": f"subagent-dsh-sdk: {D_INIT_PROTOCOL}",
                "cause": "failed",
            },
        ),
    ],
    ids=["llm-failure", "prompt-error-data", "init-error-data"],
)
async def test_planted_secrets_never_reach_the_json_on_stdout(
    tmp_path: Path, switches: dict[str, str], expected: dict[str, Any]
) -> None:
    done = await run_json(tmp_path, sdk_entry(patched_fake(tmp_path), AUDIT_SECRET_FAILURES="1", **switches))
    assert done.returncode == 1
    data = without_stderr_tail(json_of(done.stdout))  # the runtime's stderr is the operator's, under stderr_tail
    assert data == expected
    assert_secret_free(json.dumps(data))


async def test_sigint_during_a_hanging_sdk_run_prints_the_aborted_result_and_leaves_no_survivor(
    tmp_path: Path,
) -> None:
    # The runtime ignores stdin EOF, traps SIGTERM and has a grandchild that setsid()'d away: only the full ladder
    # (shutdown, EOF, SIGTERM to the tree, SIGKILL) ends them all.
    ready, sigterm, grandchild_file = tmp_path / "ready", tmp_path / "sigterm", tmp_path / "grandchild.pid"
    entry = sdk_entry(
        patched_fake(tmp_path),
        AUDIT_READY_FILE=str(ready),
        FAKE_HANG_AFTER_CHUNK="1",
        FAKE_IGNORE_EOF="1",
        FAKE_TRAP_SIGTERM="1",
        FAKE_SIGTERM_FILE=str(sigterm),
        FAKE_GRANDCHILD_PID_FILE=str(grandchild_file),
        FAKE_GRANDCHILD_SETSID="1",
    )
    config = write_sdk_config(tmp_path, entry)
    with anyio.fail_after(CLI_TIMEOUT_S):
        async with await start_cli("--config", str(config), "--json", "x", cwd=tmp_path) as process:
            await wait_for_file(ready)
            runtimes = psutil.Process(process.pid).children(recursive=True)
            grandchild = int((await wait_for_file(grandchild_file)).strip())
            assert runtimes and pid_alive(grandchild)
            process.send_signal(signal.SIGINT)
            line = await read_line(process)
            returncode = await process.wait()
    assert returncode == 130
    assert json_of(line) == {
        "run_id": "<run_id>",
        "provider": "dsh-sdk",
        "stop_reason": "aborted",
        "output": [{"type": "text", "text": "hello from fake runtime"}],
        "cause": "cancelled",
    }
    assert sigterm.exists()
    assert not any(pid_alive(proc.pid) for proc in runtimes)
    assert not pid_alive(grandchild)
