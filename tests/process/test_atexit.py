from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import pytest

from tests._provider_helpers import is_gone
from tests.conftest import PYTHON

CHILDREN = Path(__file__).parent / "children"
# Two interpreter cold starts (the owner and its child) on a possibly loaded runner.
COLD_START_S = 15

# A host process that spawns an EOF-deaf child and exits without tearing it down.
OWNER = """
import sys
import anyio
from host.process import build_child_env, spawn_managed

async def main() -> None:
    async with anyio.create_task_group() as tg:
        handle = await spawn_managed(
            [sys.executable, sys.argv[1]], cwd=sys.argv[2], env=build_child_env({}), task_group=tg, grace_ms=200
        )
        sys.stdout.write(f"{handle.pid}\\n")

anyio.run(main)
"""


@pytest.mark.anyio
async def test_host_exit_without_teardown_kills_every_owned_child() -> None:
    argv = [PYTHON, "-W", "ignore", "-c", OWNER, str(CHILDREN / "eof_deaf.py"), str(CHILDREN)]
    # The orphaned child inherits the owner's stderr, so this returns only once the atexit hook killed it.
    with anyio.fail_after(COLD_START_S):
        result = await anyio.run_process(argv, stdin=subprocess.DEVNULL, check=False)
    assert result.returncode == 0
    child = int(result.stdout.decode().strip())
    assert is_gone(child)
