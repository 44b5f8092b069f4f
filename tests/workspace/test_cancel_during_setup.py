"""The caller's cancel while a worktree is being prepared (its ``setup`` running) stops at once: the setup's process
group is killed, the start is aborted, and no worktree or branch is left."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from host import CancelController, Host, ToolFailure
from host.config._loader import parse_config
from tests.conftest import FAKE_ACP_AGENT, PYTHON
from tests.sdk_provider._helpers import wait_for_file
from tests.workspace._helpers import make_repo, our_branches, worktree_paths

pytestmark = pytest.mark.anyio


async def test_a_cancel_during_setup_aborts_the_start_and_leaves_nothing(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    marker = tmp_path / "setup-started"
    setup = [sys.executable, "-c", f"import time; open({str(marker)!r}, 'w').write('x'); time.sleep(120)"]
    entry: dict[str, Any] = {
        "kind": "acp",
        "command": PYTHON,
        "args": [str(FAKE_ACP_AGENT)],
        "workspace": "worktree",
        "setup": setup,
        "cwd": str(repo),
    }
    controller = CancelController()
    result: object = None
    with anyio.fail_after(30):
        async with Host.open(parse_config({"providers": {"child": entry}}), state_dir=tmp_path / "state") as host:
            async with anyio.create_task_group() as group:

                async def cancel_once_setup_runs() -> None:
                    await wait_for_file(marker)
                    controller.cancel("stop")

                group.start_soon(cancel_once_setup_runs)
                result = await host.execute("delegate_child", {"task": "go"}, signal=controller.signal)
    assert isinstance(result, ToolFailure)
    assert worktree_paths(repo) == [str(repo)] and our_branches(repo) == []
    assert [entry for entry in (tmp_path / "state" / "worktrees").iterdir() if not entry.name.startswith(".")] == []
