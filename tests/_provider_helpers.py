"""Builders both provider suites share: requests, a recording error sink, run scopes, ready files, secret checks.

``tests/acp_provider/_helpers.py`` and ``tests/sdk_provider/_helpers.py`` re-export these next to their own
fake-child specs and run scopes.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Literal

import anyio
import psutil
from anyio.abc import TaskGroup

from host.cancel import CancelController, CancelSignal
from host.run._contracts import AgentOptions, SubagentRequest, SubagentRun
from host.stream import StreamFrame

__all__ = [
    "PROCESS_TIMEOUT_S",
    "SECRET_MARKERS",
    "RecordingSink",
    "assert_no_secrets",
    "is_gone",
    "json_lines",
    "make_request",
    "open_started_run",
    "task_group",
    "wait_for_file",
    "wait_for_ready_marker",
    "wait_until_gone",
]

# Real-process tests: an interpreter cold start plus the handshake can take a second or two on a loaded CI box.
PROCESS_TIMEOUT_S = 15

SECRET_MARKERS = ("SECRET_TOKEN", "/private/path")


def make_request(
    signal: CancelSignal | None = None,
    *,
    text: str = "do the task",
    parent_cwd: str | None = None,
    agent_options: AgentOptions | None = None,
    on_frame: Callable[[StreamFrame], None] | None = None,
) -> SubagentRequest:
    """A request with one text block; a fresh, uncancelled signal unless one is given."""
    return SubagentRequest(
        label="test",
        prompt=[{"type": "text", "text": text}],
        signal=signal if signal is not None else CancelController().signal,
        parent_cwd=parent_cwd,
        agent_options=agent_options,
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
    def errors(self) -> list[BaseException]:
        return [error for error, _ in self.calls]

    @property
    def texts(self) -> list[str]:
        return [str(error) for error, _ in self.calls]


@asynccontextmanager
async def open_started_run(start: Callable[[TaskGroup], Awaitable[SubagentRun]]) -> AsyncGenerator[SubagentRun]:
    """Start a run (``start(group)``) in a fresh task group, and dispose it on the way out."""
    async with anyio.create_task_group() as group:
        run = await start(group)
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
    """Poll for a ready file a fake writes (callers bound this with ``fail_after``)."""
    ready = anyio.Path(path)
    while True:
        if await ready.exists():
            return await ready.read_text(encoding="utf-8")
        await anyio.sleep(0.01)


async def wait_for_ready_marker(path: Path) -> None:
    """Wait until the fake wrote exactly ``ready`` (a SIGTERM trap writes ``trap-armed`` there first)."""
    while True:
        if (await wait_for_file(path)).strip() == "ready":
            return
        await anyio.sleep(0.01)


def is_gone(pid: int) -> bool:
    """Gone, or a zombie that nobody reaps (pid 1 of some containers never reaps orphans)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


async def wait_until_gone(pid: int) -> None:
    """Poll until ``is_gone(pid)`` (callers bound this with ``fail_after``)."""
    while True:
        if is_gone(pid):
            return
        await anyio.sleep(0.01)


def assert_no_secrets(*texts: str | None) -> None:
    """Assert that no planted secret reached any of ``texts``."""
    for text in texts:
        if text is None:
            continue
        for marker in SECRET_MARKERS:
            assert marker not in text, f"{marker!r} leaked into {text!r}"


def json_lines(path: Path) -> list[object]:
    """The JSON values of a file a fake wrote one per line."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
