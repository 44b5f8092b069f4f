"""The public API: ``host.__all__`` is small and deliberate, and the README's Python example really runs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

import host

REPO_ROOT = Path(__file__).resolve().parent.parent

EXPECTED_ALL = [
    "TOOL_ABORTED",
    "TOOL_ABORTED_BEFORE_DISPATCH",
    "TOOL_TIMEOUT",
    "AcpEntryConfig",
    "AcpRunFailure",
    "AggregateError",
    "BatchInputError",
    "BatchItem",
    "BatchResult",
    "BatchRun",
    "BlockEnd",
    "BlockStart",
    "CancelController",
    "CancelSignal",
    "ChunkFrame",
    "CodedError",
    "ConfigError",
    "EntryConfig",
    "EventFrame",
    "Executor",
    "Host",
    "HostConfig",
    "JobOutcome",
    "LocalExecutor",
    "RayExecutor",
    "ReasoningDelta",
    "RunHooks",
    "RunUsage",
    "SdkEntryConfig",
    "SdkRunFailure",
    "StartAbortedError",
    "StreamChunk",
    "StreamFrame",
    "SubagentHostError",
    "SubagentResult",
    "SubagentRunError",
    "TextDelta",
    "ToolCallChunk",
    "ToolFailure",
    "ToolResult",
    "ToolSuccess",
    "UnsupportedCapabilityError",
    "UsageCost",
    "adopt_orphans",
    "delegation_tool_name",
    "foreground_failure_message",
    "load_config",
    "open_batch",
    "reap_orphans",
    "resolve_state_dir",
    "text_of",
]


def test_all_lists_exactly_the_deliberate_public_names() -> None:
    assert host.__all__ == EXPECTED_ALL


def test_every_public_name_is_importable_and_nothing_else_is_public() -> None:
    for name in host.__all__:
        assert getattr(host, name) is not None
    public = {
        name
        for name, value in vars(host).items()
        if not name.startswith("_") and not isinstance(value, type(host)) and name != "annotations"
    }
    assert public == set(EXPECTED_ALL)


def readme_python_example() -> str:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Python API", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None
    return match.group(1)


@pytest.mark.anyio
async def test_readme_python_example_runs_on_the_builtin_echo_provider(tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(readme_python_example(), encoding="utf-8")
    # Two interpreter cold starts (the example and its child agent): generous on a loaded CI box.
    with anyio.fail_after(30):
        done = await anyio.run_process(
            [sys.executable, str(script)],
            cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT), **_marker_env()},
            check=False,
            stderr=subprocess.PIPE,
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().splitlines()[-1] == "hello"


def _marker_env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key == "SUBAGENT_HOST_TEST_MARKER"}
