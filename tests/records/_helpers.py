"""Run one delegation through a recording ``Host`` on a real fake child, optionally cancelled mid-stream.

``record_run`` returns the run's records as read back from ``<state>/runs/<run_id>.jsonl``, the frames the caller's
observer saw and the tool result; a ``ready`` file makes it cancel once the child is hanging and the expected
number of chunk frames arrived.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio

from host import CancelController, Host, RunHooks, ToolResult
from host.config._loader import parse_config
from host.stream import ChunkFrame, StreamFrame
from tests._provider_helpers import wait_for_ready_marker
from tests.conftest import FAKE_ACP_AGENT, FAKE_DSH_RUNTIME, PYTHON

# Real-process tests: an interpreter cold start plus the handshake can take a second or two on a loaded CI box.
PROCESS_TIMEOUT_S = 20


def acp_entry(**env: str) -> dict[str, Any]:
    return {
        "kind": "acp",
        "command": PYTHON,
        "args": [str(FAKE_ACP_AGENT)],
        "env": env,
        "dispose_eof_grace_ms": 300,
        "dispose_grace_ms": 300,
    }


def sdk_entry(**env: str) -> dict[str, Any]:
    return {
        "kind": "dsh-sdk",
        "command": PYTHON,
        "args": [str(FAKE_DSH_RUNTIME)],
        "env": env,
        "dispose_eof_grace_ms": 300,
        "dispose_grace_ms": 300,
    }


@dataclass(frozen=True, slots=True)
class RecordedRun:
    records: list[dict[str, Any]]
    jsonl: Path
    frames: list[StreamFrame]
    result: ToolResult

    @property
    def types(self) -> list[str]:
        return [record["type"] for record in self.records]

    def of_type(self, record_type: str) -> list[dict[str, Any]]:
        return [record["data"] for record in self.records if record["type"] == record_type]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [cast("dict[str, Any]", json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()]


async def record_run(
    tmp_path: Path, entry: dict[str, Any], *, task: str = "the task", ready: Path | None = None, chunks: int = 0
) -> RecordedRun:
    """Run ``task`` on ``entry`` with recording under ``tmp_path / "state"``; cancel after ``ready`` and ``chunks``."""
    config = parse_config({"providers": {"child": entry}})
    state = tmp_path / "state"
    frames: list[StreamFrame] = []
    enough = anyio.Event()
    controller = CancelController()

    def on_frame(frame: StreamFrame) -> None:
        frames.append(frame)
        if sum(isinstance(seen, ChunkFrame) for seen in frames) >= chunks:
            enough.set()

    if chunks == 0:
        enough.set()
    result: ToolResult | None = None
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with (
            Host.open(config, parent_cwd=str(tmp_path), state_dir=state) as host,
            anyio.create_task_group() as tg,
        ):
            if ready is not None:
                marker = ready

                async def cancel_mid_stream() -> None:
                    await wait_for_ready_marker(marker)
                    await enough.wait()
                    controller.cancel("test cancel")

                tg.start_soon(cancel_mid_stream)
            result = await host.execute(
                "delegate_child", {"task": task}, signal=controller.signal, hooks=RunHooks(on_frame=on_frame)
            )
    assert result is not None
    files = sorted((state / "runs").glob("*.jsonl"))
    assert len(files) == 1, files
    return RecordedRun(read_jsonl(files[0]), files[0], frames, result)
