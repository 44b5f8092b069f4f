"""Shared builders for the ACP provider tests: specs and requests for the fake agent, sinks, and run scopes."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Literal

import anyio
from anyio.abc import TaskGroup

from host._run import SubagentRequest, SubagentRun
from host.acp_provider import AcpRunSpec, SpawnFn, start_acp_run
from host.cancel import CancelController, CancelSignal
from host.config import AcpEntryConfig
from host.process import spawn_managed
from host.stream import StreamFrame
from tests.acp_conformance import WireRecorder, validate_conversation
from tests.conftest import FAKE_ACP_AGENT, PYTHON

# Real-process tests: an interpreter cold start plus the handshake can take a second or two on a loaded CI box.
PROCESS_TIMEOUT_S = 15

SECRET_MARKERS = ("SECRET_TOKEN", "/private/path")


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


def make_request(
    signal: CancelSignal | None = None,
    *,
    text: str = "do the task",
    parent_cwd: str | None = None,
    on_frame: Callable[[StreamFrame], None] | None = None,
) -> SubagentRequest:
    """A request with one text block; a fresh, uncancelled signal unless one is given."""
    return SubagentRequest(
        label="test",
        prompt=[{"type": "text", "text": text}],
        signal=signal if signal is not None else CancelController().signal,
        parent_cwd=parent_cwd,
        on_frame=on_frame,
    )


class RecordingSink:
    """An error sink that records every ``(error, stop_reason)`` call; optionally raises afterwards."""

    def __init__(self, *, raises: bool = False) -> None:
        self.calls: list[tuple[BaseException, str]] = []
        self._raises = raises

    def __call__(self, error: BaseException, stop_reason: Literal["error"]) -> None:
        self.calls.append((error, stop_reason))
        if self._raises:
            raise RuntimeError("sink exploded")

    @property
    def texts(self) -> list[str]:
        return [str(error) for error, _ in self.calls]


@asynccontextmanager
async def open_run(
    request: SubagentRequest,
    spec: AcpRunSpec,
    *,
    spawn: SpawnFn = spawn_managed,
    on_error: RecordingSink | None = None,
) -> AsyncGenerator[SubagentRun]:
    """Start a run in a fresh task group, and dispose it on the way out."""
    async with anyio.create_task_group() as group:
        run = await start_acp_run(request, spec, task_group=group, on_error=on_error, spawn=spawn)
        try:
            yield run
        finally:
            await run.dispose()


@asynccontextmanager
async def task_group() -> AsyncGenerator[TaskGroup]:
    """A task group for tests that start runs themselves."""
    async with anyio.create_task_group() as group:
        yield group


async def wait_for_file(path: Path) -> str:
    """Poll for a ready file the fake writes (callers bound this with ``fail_after``)."""
    target = anyio.Path(path)
    while True:
        if await target.exists():
            return await target.read_text(encoding="utf-8")
        await anyio.sleep(0.01)


def assert_no_secrets(*texts: str | None) -> None:
    """Assert that no planted secret reached any of ``texts``."""
    for text in texts:
        if text is None:
            continue
        for marker in SECRET_MARKERS:
            assert marker not in text, f"{marker!r} leaked into {text!r}"


def assert_conformant(client: WireRecorder, agent: WireRecorder, *, allow_extensions: bool = False) -> None:
    """Validate both directions of a recorded connection with the ACP schema oracle."""
    assert client.messages, "nothing was recorded on the client side"
    validate_conversation(client.messages, agent.messages, allow_extensions=allow_extensions)


def json_lines(path: Path) -> list[object]:
    """The JSON values of a file written one per line by the fake agent."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
