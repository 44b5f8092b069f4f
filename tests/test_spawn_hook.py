"""``RunHooks.on_spawn``: a foreground delegation's child is reported spawned before its handshake, on both kinds;
a raising observer is logged and changes nothing. Real children (the fakes)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import anyio
import pytest

from host import CancelController, Host, RunHooks, StreamFrame, ToolSuccess
from host.config._loader import parse_config
from host.stream import EventFrame
from tests._provider_helpers import PROCESS_TIMEOUT_S
from tests.conftest import FAKE_ACP_AGENT, FAKE_DSH_RUNTIME, PYTHON

pytestmark = pytest.mark.anyio

_ENTRIES: dict[str, dict[str, Any]] = {
    "acp": {"kind": "acp", "command": PYTHON, "args": [str(FAKE_ACP_AGENT)], "env": {"MOCK_TEXT": "answer"}},
    "sdk": {"kind": "dsh-sdk", "command": PYTHON, "args": [str(FAKE_DSH_RUNTIME)], "env": {"FAKE_TEXT": "answer"}},
}


@pytest.mark.parametrize("name", ["acp", "sdk"])
async def test_the_spawn_is_reported_once_before_the_run_starts(tmp_path: Path, name: str) -> None:
    seen: list[str] = []

    def on_frame(frame: StreamFrame) -> None:
        if isinstance(frame, EventFrame):
            seen.append(frame.event.type)

    hooks = RunHooks(on_frame=on_frame, on_spawn=lambda: seen.append("spawned"))
    entry = {**_ENTRIES[name], "dispose_eof_grace_ms": 300, "dispose_grace_ms": 300}
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(parse_config({"providers": {name: entry}}), parent_cwd=str(tmp_path)) as host:
            signal = CancelController().signal
            result = await host.execute(f"delegate_{name}", {"task": "x"}, signal=signal, hooks=hooks)
    assert isinstance(result, ToolSuccess), result
    assert seen.count("spawned") == 1
    assert seen.index("spawned") < seen.index("run/start")


async def test_a_raising_spawn_observer_is_logged_and_changes_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    def on_spawn() -> None:
        raise RuntimeError("observer bug")

    entry = {**_ENTRIES["acp"], "dispose_eof_grace_ms": 300, "dispose_grace_ms": 300}
    caplog.set_level(logging.ERROR, logger="host")
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(parse_config({"providers": {"acp": entry}}), parent_cwd=str(tmp_path)) as host:
            result = await host.execute(
                "delegate_acp", {"task": "x"}, signal=CancelController().signal, hooks=RunHooks(on_spawn=on_spawn)
            )
    assert result.content == [{"type": "text", "text": "answer"}]
    assert [record.getMessage() for record in caplog.records] == ["subagent-host: spawn observer failed"]
