"""A failure inside ``git()``'s own reader tasks (a stdout sink that raises, the input of a step spawned ahead of
it that cannot be computed) reaches the caller as the ``WorkspaceError`` it is, not wrapped in the task group's
``ExceptionGroup``: every caller catches ``WorkspaceError`` (the output cap of ``_read_capped`` raised the same
way), and nothing of the command is left."""

from __future__ import annotations

import anyio
import pytest

from host._exceptions import WorkspaceError
from host.workspace._git import git

pytestmark = pytest.mark.anyio


async def test_a_sink_that_raises_fails_the_command_with_its_own_error() -> None:
    async def refuse(_chunk: bytes) -> None:
        raise WorkspaceError("the sink refused", "git-failed")

    with anyio.fail_after(30), pytest.raises(WorkspaceError, match="the sink refused"):
        await git(["--version"], cwd="/", on_stdout=refuse)


async def test_an_input_that_cannot_be_computed_fails_the_command_with_its_own_error() -> None:
    async def no_input() -> bytes:
        raise WorkspaceError("no input", "git-failed")

    with anyio.fail_after(30), pytest.raises(WorkspaceError, match="no input"):
        await git(["hash-object", "--stdin"], cwd="/", stdin=no_input)
