"""``serve`` like every command: the no-config line on stderr and the built-in echo, whose description reads as
sentences; an empty stdin is a clean end with no warning; a call the client cancelled gets no response, also when
the cancel and a shutdown signal arrive together."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import anyio
import pytest

from tests._provider_helpers import wait_for_ready_marker
from tests.cli._script import SCRIPT, run_script, script_env
from tests.server._helpers import SERVE_TIMEOUT_S, RawServer, acp_entry, write_config

_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def test_serve_without_a_config_says_so_and_serves_the_built_in_echo_described_in_sentences(tmp_path: Path) -> None:
    lines = b"".join(json.dumps(message).encode() + b"\n" for message in (_INITIALIZE, _LIST))
    done = run_script("serve", "--no-record", cwd=tmp_path, env=script_env(tmp_path), stdin=lines)
    assert done.returncode == 0
    notices = [line for line in done.stderr.decode().splitlines() if "no config found" in line]
    assert len(notices) == 1
    assert notices[0].startswith("subagent-host: no config found (searched ")
    assert notices[0].endswith("; using the built-in echo provider")
    answers = {answer["id"]: answer for answer in map(json.loads, done.stdout.splitlines())}
    (echo,) = [tool for tool in answers[2]["result"]["tools"] if tool["name"] == "delegate_echo"]
    assert "for trying subagent-host out. The child does not see this conversation" in echo["description"]


def test_an_empty_stdin_is_a_clean_end_with_no_warning(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"echo": acp_entry()})
    done = subprocess.run(
        [SCRIPT, "serve", "--config", str(config), "--no-record"],
        stdin=subprocess.DEVNULL, cwd=tmp_path, env=script_env(tmp_path), capture_output=True, timeout=SERVE_TIMEOUT_S,
        check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (0, b"")
    assert b"WARNING" not in done.stderr, done.stderr


@pytest.mark.anyio
@pytest.mark.parametrize("shutdown", ["SIGINT", "SIGTERM", "stdin-eof"])
async def test_a_call_cancelled_as_shutdown_begins_gets_no_response(tmp_path: Path, shutdown: str) -> None:
    ready = tmp_path / "ready"
    config = write_config(tmp_path, {"hang": acp_entry(MOCK_HANG="1", MOCK_READY_FILE=str(ready))})
    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with RawServer.open(config) as server:
            await server.initialize()
            await server.request(7, "tools/call", {"name": "delegate_hang", "arguments": {"task": "x"}})
            await wait_for_ready_marker(ready)
            # What Claude Code does on SIGINT: the cancel and the signal at the same moment.
            await server.send(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": "x"}}
            )
            if shutdown == "stdin-eof":
                await server.close_stdin()
            else:
                server.process.send_signal(getattr(signal, shutdown))
            with pytest.raises((anyio.EndOfStream, anyio.IncompleteRead)):
                while True:
                    await server.read()
            returncode = await server.process.wait()
    assert returncode == 0
    assert server.responses_for(7) == []
