"""Session tests: a host over the fake ACP agent with its session switches, and readers of what the fake proves.

The fake's ``MOCK_SESSION_ECHO`` answer is ``pid=<pid> session=<n> tasks=<t1> | <t2> ...``: which process answered
and every task of the agent-side session so far, so a test sees both "same child" and "kept the context".
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import psutil

from host import HostConfig, ToolResult
from host.config._loader import parse_config
from tests.conftest import FAKE_ACP_AGENT, PYTHON

PROCESS_TIMEOUT_S = 20
_ECHO = re.compile(r"pid=(\d+) session=(\d+) tasks=(.*)", re.DOTALL)


def session_entry(
    tmp_path: Path,
    *,
    idle_ms: float | None = None,
    grace_ms: float = 300,
    env: dict[str, str] | None = None,
    **switches: str,
) -> dict[str, Any]:
    """An ``acp`` entry on the fake agent that echoes its session, logs session methods and persists sessions."""
    entry: dict[str, Any] = {
        "kind": "acp",
        "command": PYTHON,
        "args": [str(FAKE_ACP_AGENT)],
        "dispose_eof_grace_ms": grace_ms,
        "dispose_grace_ms": grace_ms,
        "env": {
            "MOCK_SESSION_ECHO": "1",
            "MOCK_SESSION_LOG": str(tmp_path / "session.log"),
            "MOCK_SESSION_DIR": str(tmp_path),
            **(env or {}),
            **switches,
        },
    }
    if idle_ms is not None:
        entry["session_idle_ms"] = idle_ms
    return entry


def session_config(tmp_path: Path, host: dict[str, Any] | None = None, **entries: dict[str, Any]) -> HostConfig:
    document: dict[str, Any] = {"providers": entries or {"acp": session_entry(tmp_path)}}
    if host is not None:
        document["host"] = host
    return parse_config(document)


def echo_of(result: ToolResult) -> tuple[int, list[str]]:
    """``(pid, tasks)`` of a completed call's echo answer."""
    data = result.to_json()
    assert data["is_error"] is False, data
    text = data["content"][0]["text"]
    match = _ECHO.search(text)
    assert match is not None, text
    return int(match.group(1)), match.group(3).split(" | ")


def session_log(tmp_path: Path) -> list[str]:
    """The session methods the fake received, in order (``<method> <session id>``)."""
    path = tmp_path / "session.log"
    return path.read_text().splitlines() if path.exists() else []


async def wait_for_log(tmp_path: Path, method: str, count: int) -> None:
    """Wait until the fake logged ``method`` ``count`` times (callers bound this with ``fail_after``)."""
    while True:
        if sum(1 for line in session_log(tmp_path) if line.startswith(method + " ")) >= count:
            return
        await anyio.sleep(0.02)


async def wait_until(condition: Callable[[], bool]) -> None:
    """Poll ``condition`` until it holds (callers bound this with ``fail_after``)."""
    while True:
        if condition():
            return
        await anyio.sleep(0.01)


def live_agents() -> list[psutil.Process]:
    """The live fake ACP agents among this process's descendants."""
    found: list[psutil.Process] = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and str(FAKE_ACP_AGENT) in " ".join(proc.cmdline()):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def text_of(result: ToolResult) -> str:
    block = result.content[0]
    assert block["type"] == "text"
    return str(block["text"])
