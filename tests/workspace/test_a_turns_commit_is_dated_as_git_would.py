"""The commit a turn leaves on its branch is dated as ``git commit-tree`` would date it: in the host's local time
zone of that moment (not always ``+0000``), and by ``GIT_AUTHOR_DATE`` / ``GIT_COMMITTER_DATE`` when the host's
environment sets them; the author and committer stay the host's fixed identity."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest

from host.workspace import Workspaces
from tests.workspace._helpers import git, make_repo

pytestmark = pytest.mark.anyio

_TIMEOUT_S = 60
_IDENTITY = "subagent-host <subagent-host@localhost>"


@pytest.fixture
def local_zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process's local time zone is UTC+05:30 (a POSIX TZ rule: no zone database needed)."""
    monkeypatch.setenv("TZ", "XST-05:30")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


async def _turn_commit(tmp_path: Path) -> dict[str, str]:
    """The author and committer lines of the commit one turn that changed ``a.txt`` left on its branch."""
    repo = make_repo(tmp_path / "repo")
    workspaces = Workspaces(tmp_path / "state")
    with anyio.fail_after(_TIMEOUT_S):
        workspace = await workspaces.acquire(str(repo), "dated")
        (Path(workspace.path) / "a.txt").write_text("one\n")
        assert await workspaces.after_turn(workspace, "dated-run") is not None
        await workspaces.release(workspace)
    header = git(repo, "cat-file", "commit", workspace.branch).split("\n\n", 1)[0]
    return dict(line.split(" ", 1) for line in header.splitlines() if line.startswith(("author ", "committer ")))


@pytest.mark.usefixtures("local_zone")
async def test_the_turns_commit_carries_the_local_utc_offset(tmp_path: Path) -> None:
    before = int(time.time())
    lines = await _turn_commit(tmp_path)
    for role in ("author", "committer"):
        identity, seconds, offset = lines[role].rsplit(" ", 2)
        assert (identity, offset) == (_IDENTITY, "+0530")
        assert before <= int(seconds) <= time.time()


async def test_the_turns_commit_honours_git_author_and_committer_dates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_AUTHOR_DATE", "2005-04-07T22:13:13 +0200")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "@1112911993 -0700")
    lines = await _turn_commit(tmp_path)
    authored = int(datetime(2005, 4, 7, 20, 13, 13, tzinfo=UTC).timestamp())
    assert lines == {
        "author": f"{_IDENTITY} {authored} +0200",
        "committer": f"{_IDENTITY} 1112911993 -0700",
    }


@pytest.mark.usefixtures("local_zone")
async def test_a_committer_date_alone_leaves_the_author_dated_now_in_the_local_zone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_COMMITTER_DATE", "@1112911993 +0000")
    before = int(time.time())
    lines = await _turn_commit(tmp_path)
    assert lines["committer"] == f"{_IDENTITY} 1112911993 +0000"
    identity, seconds, offset = lines["author"].rsplit(" ", 2)
    assert (identity, offset) == (_IDENTITY, "+0530")
    assert before <= int(seconds) <= time.time()
