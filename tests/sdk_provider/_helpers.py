"""Shared builders for the DSH SDK provider tests: specs, entries and requests for the fake runtime, sinks,
run scopes, the secret check and the result snapshots (``snapshots/sdk/<name>.json``)."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
from anyio.abc import TaskGroup

from host._run import AgentOptions, SubagentRequest, SubagentRun
from host.cancel import CancelController, CancelSignal
from host.config import SdkEntryConfig
from host.diagnostics import SubagentResult
from host.sdk_provider import ClientFactory, SdkClient, SdkRunSpec, start_sdk_run
from host.stream import StreamFrame
from tests.conftest import FAKE_DSH_RUNTIME, PYTHON
from tests.snapshots import assert_snapshot

# Real-process tests: an interpreter cold start plus the handshake can take a second or two on a loaded CI box.
PROCESS_TIMEOUT_S = 15

# The fast-teardown settings of sdk-provider.md §7 (shutdown, EOF grace, signal grace), and the defaults.
FAST_TEARDOWN = (100.0, 200.0, 200.0)
DEFAULT_TEARDOWN = (1000.0, 6000.0, 3000.0)

SECRET_MARKERS = ("SECRET_TOKEN", "/private/path")


def D(stage: str, category: str) -> str:
    """``Subagent failure (provider: DSH SDK; stage: <stage>; category: <category>)``."""
    return f"Subagent failure (provider: DSH SDK; stage: {stage}; category: {category})"


def R(stage: str, category: str) -> str:
    """``subagent-dsh-sdk: `` + ``D(stage, category)``."""
    return "subagent-dsh-sdk: " + D(stage, category)


def runtime_spec(
    cwd: Path | str,
    *,
    command: str = PYTHON,
    args: Sequence[str] | None = None,
    max_tokens: int | None = None,
    fast: bool = True,
    env: Mapping[str, str] | None = None,
    **switches: str,
) -> SdkRunSpec:
    """A run spec for the fake runtime (``fake-provider``/``fake-model``), scripted by ``env`` and ``FAKE_*``."""
    shutdown, eof_grace, grace = FAST_TEARDOWN if fast else DEFAULT_TEARDOWN
    return SdkRunSpec(
        command=command,
        args=tuple(args) if args is not None else (str(FAKE_DSH_RUNTIME),),
        cwd=str(cwd),
        env={**(env or {}), **switches},
        provider="fake-provider",
        model="fake-model",
        max_tokens=max_tokens,
        shutdown_timeout_ms=shutdown,
        dispose_eof_grace_ms=eof_grace,
        dispose_grace_ms=grace,
    )


def runtime_entry(
    *,
    name: str = "dsh-sdk",
    cwd: str | None = None,
    command: str = PYTHON,
    args: Sequence[str] | None = None,
    max_tokens: int | None = None,
    fast: bool = True,
    env: Mapping[str, str] | None = None,
    **switches: str,
) -> SdkEntryConfig:
    """A validated provider entry for the fake runtime."""
    shutdown, eof_grace, grace = FAST_TEARDOWN if fast else DEFAULT_TEARDOWN
    return SdkEntryConfig(
        name=name,
        command=command,
        args=tuple(args) if args is not None else (str(FAKE_DSH_RUNTIME),),
        cwd=cwd,
        env={**(env or {}), **switches},
        provider="fake-provider",
        model="fake-model",
        max_tokens=max_tokens,
        shutdown_timeout_ms=shutdown,
        dispose_eof_grace_ms=eof_grace,
        dispose_grace_ms=grace,
    )


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


@asynccontextmanager
async def open_run(
    request: SubagentRequest,
    spec: SdkRunSpec,
    *,
    client_factory: ClientFactory = SdkClient,
    on_error: RecordingSink | None = None,
) -> AsyncGenerator[SubagentRun, None]:
    """Start a run in a fresh task group, and dispose it on the way out."""
    async with anyio.create_task_group() as group:
        run = await start_sdk_run(request, spec, task_group=group, on_error=on_error, client_factory=client_factory)
        try:
            yield run
        finally:
            await run.dispose()


async def run_to_result(spec: SdkRunSpec, request: SubagentRequest | None = None, **kwargs: Any) -> SubagentResult:
    """Start, await the result and dispose; the whole thing under the process timeout."""
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(request if request is not None else make_request(), spec, **kwargs) as run:
            return await run.result()


@asynccontextmanager
async def task_group() -> AsyncGenerator[TaskGroup, None]:
    """A task group for tests that start runs themselves."""
    async with anyio.create_task_group() as group:
        yield group


async def wait_for_file(path: Path) -> str:
    """Poll for a ready file the fake writes (callers bound this with ``fail_after``)."""
    ready = anyio.Path(path)
    while True:
        if await ready.exists():
            return await ready.read_text(encoding="utf-8")
        await anyio.sleep(0.01)


def assert_no_secrets(*texts: str | None) -> None:
    """Assert that no planted secret reached any of ``texts``."""
    for text in texts:
        if text is None:
            continue
        for marker in SECRET_MARKERS:
            assert marker not in text, f"{marker!r} leaked into {text!r}"


def text_blocks(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


def json_lines(path: Path) -> list[object]:
    """The JSON values of a file written one per line by the fake runtime."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` names a live, non-zombie process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as file:
            state = file.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def assert_result_snapshot(name: str, result: SubagentResult) -> None:
    """Compare ``result.to_json()`` with ``snapshots/sdk/<name>.json`` through the shared snapshot helper."""
    assert_snapshot("sdk", name, result.to_json())
