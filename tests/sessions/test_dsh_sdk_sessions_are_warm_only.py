"""DSH SDK sessions are warm only (docs/behaviour.md#sessions): a follow-up goes to the same live runtime with the
same session id, which kept its context; a cancelled turn ends the runtime, and the session is then expired."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from host import CancelController, EventFrame, Host, RunHooks, StreamFrame, ToolResult
from host.config._loader import parse_config
from tests.conftest import FAKE_DSH_RUNTIME, PYTHON
from tests.sessions._helpers import PROCESS_TIMEOUT_S, text_of

pytestmark = pytest.mark.anyio

EXPIRED = "Error: subagent-dsh-sdk: Subagent failure (provider: DSH SDK; stage: resume; category: session-expired)"


def _config(**env: str) -> Any:
    entry = {
        "kind": "dsh-sdk",
        "command": PYTHON,
        "args": [str(FAKE_DSH_RUNTIME)],
        "shutdown_timeout_ms": 100,
        "dispose_eof_grace_ms": 200,
        "dispose_grace_ms": 200,
        "env": {"FAKE_SESSION_ECHO": "1", **env},
    }
    return parse_config({"providers": {"sdk": entry}})


def _value(result: ToolResult) -> dict[str, Any]:
    data = result.to_json()
    assert data["is_error"] is False, data
    return data["value"]


async def test_a_follow_up_reaches_the_same_runtime_which_kept_the_context(tmp_path: Path) -> None:
    signal = CancelController().signal
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(_config(), parent_cwd=str(tmp_path)) as host:
            first = await host.execute("delegate_sdk", {"task": "one"}, signal=signal)
            session_id = _value(first)["session_id"]
            second = await host.execute("delegate_sdk", {"task": "two", "session_id": session_id}, signal=signal)
    pid = text_of(first).split()[0]
    assert text_of(first) == f"{pid} tasks=one"
    assert text_of(second) == f"{pid} tasks=one | two"


async def test_a_cancelled_turn_ends_the_runtime_and_the_session_expires(tmp_path: Path) -> None:
    signal = CancelController().signal
    controller = CancelController()
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with Host.open(_config(FAKE_HANG_ON="two"), parent_cwd=str(tmp_path)) as host:
            first = await host.execute("delegate_sdk", {"task": "one"}, signal=signal)
            session_id = _value(first)["session_id"]
            published = anyio.Event()

            def on_frame(frame: StreamFrame) -> None:
                if isinstance(frame, EventFrame) and frame.event.type == "run/start":
                    published.set()

            async with anyio.create_task_group() as group:

                async def cancelled() -> None:
                    # The runtime never answers this prompt: only the cancel ends the turn.
                    arguments = {"task": "two", "session_id": session_id}
                    hooks = RunHooks(on_frame=on_frame)
                    await host.execute("delegate_sdk", arguments, signal=controller.signal, hooks=hooks)

                group.start_soon(cancelled)
                await published.wait()  # the turn is under way on the runtime (a cancel before it never touches it)
                controller.cancel("stop")
            expired = await host.execute("delegate_sdk", {"task": "three", "session_id": session_id}, signal=signal)
            fresh = await host.execute(
                "delegate_sdk", {"task": "four", "session_id": session_id, "if_lost": "new"}, signal=signal
            )
    assert text_of(expired) == EXPIRED
    assert _value(fresh)["context_reset"] is True and text_of(fresh).endswith("tasks=four")
