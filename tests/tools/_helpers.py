"""Host configs for the delegation tests: one fake ACP agent or DSH SDK runtime entry, scripted by env switches.

Also the model-visible text of a result. Real children are cold interpreters, hence ``PROCESS_TIMEOUT_S``.
"""

from __future__ import annotations

from typing import Any

import psutil

from host import HostConfig, ToolResult
from host.config._loader import parse_config
from tests.conftest import FAKE_ACP_AGENT, FAKE_DSH_RUNTIME, PYTHON
from tests.snapshots import scrub_session_ids

# Real-process tests: an interpreter cold start plus the handshake can take a second or two on a loaded CI box.
PROCESS_TIMEOUT_S = 15


def acp_config(
    *,
    timeout_ms: float | None = None,
    command: str = PYTHON,
    permission: str | None = None,
    grace_ms: float = 300,
    session_idle_ms: float | None = None,
    **env: str,
) -> HostConfig:
    """One ``acp`` entry on the fake agent, scripted by ``env``, with fast teardown graces."""
    entry: dict[str, Any] = {
        "kind": "acp",
        "command": command,
        "args": [str(FAKE_ACP_AGENT)],
        "env": env,
        "dispose_eof_grace_ms": grace_ms,
        "dispose_grace_ms": grace_ms,
    }
    if permission is not None:
        entry["permission"] = permission
    if timeout_ms is not None:
        entry["timeout_ms"] = timeout_ms
    if session_idle_ms is not None:
        entry["session_idle_ms"] = session_idle_ms
    return parse_config({"providers": {"acp": entry}})


def sdk_config(name: str = "dsh-sdk", **env: str) -> HostConfig:
    """One ``dsh-sdk`` entry named ``name`` on the fake runtime, with the spec's fast-teardown settings."""
    entry: dict[str, Any] = {
        "kind": "dsh-sdk",
        "command": PYTHON,
        "args": [str(FAKE_DSH_RUNTIME)],
        "env": env,
        "shutdown_timeout_ms": 100,
        "dispose_eof_grace_ms": 200,
        "dispose_grace_ms": 200,
    }
    return parse_config({"providers": {name: entry}})


def text_of(result: ToolResult) -> str:
    """The result's one text block, a job read's session id replaced by ``<session_id>``."""
    block = result.content[0]
    assert block["type"] == "text"
    text = scrub_session_ids(block["text"])
    assert isinstance(text, str)
    return text


def live_fakes() -> list[psutil.Process]:
    """The fake runtimes still alive (not zombies) among this process's descendants."""
    alive: list[psutil.Process] = []
    for proc in psutil.Process().children(recursive=True):
        try:
            cmdline = " ".join(proc.cmdline())
            if proc.status() != psutil.STATUS_ZOMBIE and (
                str(FAKE_ACP_AGENT) in cmdline or str(FAKE_DSH_RUNTIME) in cmdline
            ):
                alive.append(proc)
        except psutil.NoSuchProcess:
            continue
    return alive
