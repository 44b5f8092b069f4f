"""Builders for the DSH SDK provider tests: specs and entries for the fake runtime, run scopes, failure texts and
the result snapshots (``snapshots/sdk/<name>.json``).

Requests, the recording sink, task groups, ready files and the secret check are ``tests._provider_helpers``'s,
re-exported for the suite's imports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio

from host.config import SdkEntryConfig
from host.diagnostics import SubagentResult
from host.run._contracts import SubagentRequest, SubagentRun
from host.sdk_provider._run import ClientFactory, start_sdk_run
from host.sdk_provider.client import SdkClient, SdkRunSpec
from tests._provider_helpers import PROCESS_TIMEOUT_S as PROCESS_TIMEOUT_S
from tests._provider_helpers import SECRET_MARKERS as SECRET_MARKERS
from tests._provider_helpers import RecordingSink as RecordingSink
from tests._provider_helpers import assert_no_secrets as assert_no_secrets
from tests._provider_helpers import json_lines as json_lines
from tests._provider_helpers import make_request as make_request
from tests._provider_helpers import open_started_run
from tests._provider_helpers import task_group as task_group
from tests._provider_helpers import wait_for_file as wait_for_file
from tests.conftest import FAKE_DSH_RUNTIME, PYTHON
from tests.snapshots import assert_snapshot

# The fast-teardown settings of docs/behaviour.md#sdk-test-seams (shutdown, EOF grace, signal grace), and the defaults.
FAST_TEARDOWN = (100.0, 200.0, 200.0)
DEFAULT_TEARDOWN = (1000.0, 6000.0, 3000.0)


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


def open_run(
    request: SubagentRequest,
    spec: SdkRunSpec,
    *,
    client_factory: ClientFactory = SdkClient,
    on_error: RecordingSink | None = None,
) -> AbstractAsyncContextManager[SubagentRun]:
    """Start a run in a fresh task group, and dispose it on the way out."""
    return open_started_run(
        lambda group: start_sdk_run(request, spec, task_group=group, on_error=on_error, client_factory=client_factory)
    )


async def run_to_result(spec: SdkRunSpec, request: SubagentRequest | None = None, **kwargs: Any) -> SubagentResult:
    """Start, await the result and dispose; the whole thing under the process timeout."""
    with anyio.fail_after(PROCESS_TIMEOUT_S):
        async with open_run(request if request is not None else make_request(), spec, **kwargs) as run:
            return await run.result()


def text_blocks(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


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


def script_args(tmp_path: Path, name: str, source: str) -> list[str]:
    path = tmp_path / name
    path.write_text(source, encoding="utf-8")
    return [str(path)]
