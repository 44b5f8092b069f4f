"""Builders for the ACP provider tests: specs and entries for the fake agent, run scopes, the wire oracle check.

The builders both provider suites share (requests, sinks, ready files, secret checks) come from
``tests._provider_helpers`` and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Literal

from host.acp_provider._run import AcpRunSpec, start_acp_run
from host.config import AcpEntryConfig
from host.process import spawn_managed
from host.run._child import SpawnFn
from host.run._contracts import SubagentRequest, SubagentRun
from tests._provider_helpers import PROCESS_TIMEOUT_S as PROCESS_TIMEOUT_S
from tests._provider_helpers import SECRET_MARKERS as SECRET_MARKERS
from tests._provider_helpers import RecordingSink as RecordingSink
from tests._provider_helpers import assert_no_secrets as assert_no_secrets
from tests._provider_helpers import json_lines as json_lines
from tests._provider_helpers import make_request as make_request
from tests._provider_helpers import open_started_run
from tests._provider_helpers import task_group as task_group
from tests._provider_helpers import wait_for_file as wait_for_file
from tests.acp_conformance import WireRecorder, validate_conversation
from tests.conftest import FAKE_ACP_AGENT, PYTHON


def agent_spec(
    cwd: Path | str,
    extra_env: Mapping[str, str] | None = None,
    /,
    *,
    permission: Literal["allow", "reject"] = "reject",
    eof_grace_ms: float = 6000,
    grace_ms: float = 3000,
    command: str = PYTHON,
    args: Sequence[str] | None = None,
    **env: str,
) -> AcpRunSpec:
    """A run spec for the fake ACP agent, scripted by ``extra_env`` and ``env`` (``MOCK_*`` switches)."""
    return AcpRunSpec(
        command=command,
        args=tuple(args) if args is not None else (str(FAKE_ACP_AGENT),),
        cwd=str(cwd),
        env={**(extra_env or {}), **env},
        permission=permission,
        dispose_eof_grace_ms=eof_grace_ms,
        dispose_grace_ms=grace_ms,
    )


def agent_entry(
    extra_env: Mapping[str, str] | None = None,
    /,
    *,
    name: str = "acp",
    cwd: str | None = None,
    permission: Literal["allow", "reject"] = "reject",
    eof_grace_ms: float = 6000,
    grace_ms: float = 3000,
    command: str = PYTHON,
    args: Sequence[str] | None = None,
    **env: str,
) -> AcpEntryConfig:
    """A validated provider entry for the fake ACP agent, scripted by ``extra_env`` and ``env``."""
    return AcpEntryConfig(
        name=name,
        command=command,
        args=tuple(args) if args is not None else (str(FAKE_ACP_AGENT),),
        cwd=cwd,
        env={**(extra_env or {}), **env},
        permission=permission,
        dispose_eof_grace_ms=eof_grace_ms,
        dispose_grace_ms=grace_ms,
    )


def open_run(
    request: SubagentRequest,
    spec: AcpRunSpec,
    *,
    spawn: SpawnFn = spawn_managed,
    on_error: RecordingSink | None = None,
) -> AbstractAsyncContextManager[SubagentRun]:
    """Start a run in a fresh task group, and dispose it on the way out."""
    return open_started_run(
        lambda group: start_acp_run(request, spec, task_group=group, on_error=on_error, spawn=spawn)
    )


def assert_conformant(client: WireRecorder, agent: WireRecorder, *, allow_extensions: bool = False) -> None:
    """Validate both directions of a recorded connection with the ACP schema oracle."""
    assert client.messages, "nothing was recorded on the client side"
    validate_conversation(client.messages, agent.messages, allow_extensions=allow_extensions)


# A minimal agent that starts a grandchild inheriting its stdout (the pipe outlives the agent), then exits with
# code 3 on the request named by argv[1], after one `partial` chunk when that request is `session/prompt`.
EXIT_BEHIND_A_GRANDCHILD = """\
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


def agent_exiting_on(tmp_path: Path, stage: str) -> list[str]:
    script = tmp_path / "exit_behind_grandchild.py"
    script.write_text(EXIT_BEHIND_A_GRANDCHILD, encoding="utf-8")
    return [str(script), stage]
