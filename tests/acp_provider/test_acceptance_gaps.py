"""Audit gaps of issue 3: a child exit hidden by a grandchild's stdout, unregistration, dispose before settling.

* acp-provider.md §4.3, §5.3, §9.3: a request fails when the child exits, even while a descendant keeps the
  stdout pipe open (the exit is observed by polling, never by waiting for pipe EOF).
* §14.10 scenario 90: the host lists no provider once it has closed.
* §14.11 scenario 95: the timed-out child is disposed before the tool call settles.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from host import CancelController, Host
from host._exceptions import AcpRunFailure
from host.acp_provider import start_acp_run
from tests._provider_helpers import is_gone
from tests.acp_provider._helpers import PROCESS_TIMEOUT_S, agent_spec, make_request, open_run, task_group
from tests.tools._helpers import acp_config, text_of

F = "Subagent failure (provider: ACP; "
E = "subagent-acp: " + F

# A minimal agent that starts a grandchild inheriting its stdout (the pipe outlives the agent), then exits with
# code 3 on the request named by argv[1], after one `partial` chunk when that request is `session/prompt`.
_EXIT_BEHIND_A_GRANDCHILD = """\
import json, os, subprocess, sys

stage = sys.argv[1]
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"], stdin=subprocess.DEVNULL)


def send(message):
    os.write(1, (json.dumps(dict(message, jsonrpc="2.0")) + "\\n").encode())


for line in sys.stdin:
    message = json.loads(line)
    method, request_id = message.get("method"), message.get("id")
    if method == stage:
        if stage == "session/prompt":
            chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "partial"}}
            send({"method": "session/update", "params": {"sessionId": "s", "update": chunk}})
        os._exit(3)
    if method == "initialize":
        send({"id": request_id, "result": {"protocolVersion": 1}})
    elif method == "session/new":
        send({"id": request_id, "result": {"sessionId": "s"}})
"""


def _agent_exiting_on(tmp_path: Path, stage: str) -> list[str]:
    script = tmp_path / "exit_behind_grandchild.py"
    script.write_text(_EXIT_BEHIND_A_GRANDCHILD, encoding="utf-8")
    return [str(script), stage]


@pytest.mark.anyio
async def test_a_prompt_fails_with_the_exit_code_when_the_child_exits_while_a_grandchild_holds_stdout(
    tmp_path: Path,
) -> None:
    spec = agent_spec(tmp_path, eof_grace_ms=200, grace_ms=200, args=_agent_exiting_on(tmp_path, "session/prompt"))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(make_request(), spec) as run:
            # The child exits at once on the prompt; observing it takes at most the 200 ms grace.
            with anyio.fail_after(5):
                result = await run.result()
    assert result.to_json() == {
        "output": [{"type": "text", "text": "partial"}],
        "diagnostic": F + "stage: process; category: process-exit; exit code: 3)",
        "stop_reason": "error",
    }


@pytest.mark.anyio
async def test_initialize_fails_with_the_exit_code_when_the_child_exits_while_a_grandchild_holds_stdout(
    tmp_path: Path,
) -> None:
    spec = agent_spec(tmp_path, eof_grace_ms=200, grace_ms=200, args=_agent_exiting_on(tmp_path, "initialize"))
    # An interpreter cold start, then an exit that must be observed within the 200 ms grace.
    with anyio.fail_after(10):
        async with task_group() as group:
            with pytest.raises(AcpRunFailure) as caught:
                await start_acp_run(make_request(), spec, task_group=group)
    assert str(caught.value) == E + "stage: initialize; category: process-exit; exit code: 3)"


@pytest.mark.anyio
async def test_the_host_lists_its_acp_provider_after_load_and_none_after_it_closes() -> None:
    with anyio.fail_after(5):
        async with Host.open(acp_config()) as host:
            assert list(host.providers) == ["acp"]
    assert list(host.providers) == []


@pytest.mark.anyio
async def test_a_timed_out_child_is_disposed_before_the_tool_call_settles(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    config = acp_config(timeout_ms=200, MOCK_HANG="1", MOCK_GRANDCHILD_PID_FILE=str(pid_file))
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(config, parent_cwd=str(tmp_path)) as host:
            result = await host.execute("delegate_acp", {"task": "x"}, signal=CancelController().signal)
            # Still inside the host: only the tool's own dispose can have reaped the tree by now.
            disposed = is_gone(int(pid_file.read_text()))
    assert text_of(result) == "Error: tool call timed out after 200ms"
    assert disposed
