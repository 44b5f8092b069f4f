"""Real git repositories in temporary directories, the user-visible repository state, and the console script.

``user_state`` is what a worktree run must never change: HEAD (and what it names), the index file's bytes, the
stash and the branches other than ``subagent-host/*``. Every git call here runs with ``GIT_OPTIONAL_LOCKS=0`` so
the test itself never refreshes the index.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import anyio
import anyio.to_thread

from host import CancelController, Host, ToolResult, ToolSuccess
from host.cancel import CancelSignal
from host.config import DEFAULT_MAX_WARM_SESSIONS, HostConfig
from host.config._loader import parse_config
from tests._provider_helpers import wait_until_gone
from tests.cli._helpers import CONSOLE_SCRIPT, acp_entry, cli_env, write_config
from tests.conftest import FAKE_ACP_AGENT, PYTHON
from tests.sdk_provider._helpers import wait_for_file
from tests.server._helpers import fake_agents

__all__ = [
    "CLI_TIMEOUT_S",
    "fs_ops",
    "git",
    "host_cli",
    "make_repo",
    "our_branches",
    "sigkill_host_once_ready",
    "user_state",
    "wait_until_removed",
    "worktree_config",
    "worktree_paths",
]

CLI_TIMEOUT_S: Final = 60
"""A cold interpreter, git checkouts and a fake child on a loaded 2-core box."""

_GIT_ENV: Final = {
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_AUTHOR_NAME": "user",
    "GIT_AUTHOR_EMAIL": "user@localhost",
    "GIT_COMMITTER_NAME": "user",
    "GIT_COMMITTER_EMAIL": "user@localhost",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(repo: Path, *args: str, check: bool = True) -> str:
    """Run git in ``repo`` and return its stdout as text."""
    env = {**os.environ, **_GIT_ENV}
    completed = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, check=False)
    if check and completed.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {completed.stderr.decode(errors='replace')}")
    return completed.stdout.decode("utf-8", "surrogateescape")


def make_repo(path: Path) -> Path:
    """A repository with one commit (``a.txt``: three lines, ``b.txt``, ``c.txt``, ``.gitignore``: ``.env``), a
    second branch ``feature`` and one stash entry."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    (path / "a.txt").write_text("one\ntwo\nthree\n")
    (path / "b.txt").write_text("bee\n")
    (path / "c.txt").write_text("sea\n")
    (path / ".gitignore").write_text(".env\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "initial")
    git(path, "branch", "feature")
    (path / "c.txt").write_text("stashed work\n")
    git(path, "stash", "push", "-q", "-m", "the user's stash")
    return path


def user_state(repo: Path) -> dict[str, Any]:
    """HEAD, the index bytes, the stash and the non-``subagent-host/*`` branches."""
    branches = [
        ref
        for ref in git(repo, "for-each-ref", "--format=%(refname)", "refs/heads").split()
        if "/subagent-host/" not in ref
    ]
    return {
        "head": git(repo, "rev-parse", "HEAD").strip(),
        "symbolic": git(repo, "symbolic-ref", "-q", "HEAD", check=False).strip(),
        "index": hashlib.sha256((repo / ".git" / "index").read_bytes()).hexdigest(),
        "stash": git(repo, "stash", "list"),
        "stash_ref": git(repo, "rev-parse", "-q", "--verify", "refs/stash", check=False).strip(),
        "branches": branches,
    }


def our_branches(repo: Path) -> list[str]:
    """The ``subagent-host/*`` branches."""
    return git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/subagent-host/").split()


def worktree_paths(repo: Path) -> list[str]:
    """Every worktree ``git worktree list`` shows (the main one first)."""
    lines = git(repo, "worktree", "list", "--porcelain").splitlines()
    return [line.removeprefix("worktree ") for line in lines if line.startswith("worktree ")]


def fs_ops(*ops: Sequence[str]) -> str:
    """The fake agent's ``MOCK_FS_OPS`` value."""
    return json.dumps([list(op) for op in ops])


def worktree_config(tmp_path: Path, repo: Path, entries: Mapping[str, Mapping[str, str]], **keys: Any) -> Path:
    """A config with one fake-agent entry per name (its ``MOCK_*`` env), ``cwd = repo``, ``workspace = worktree``."""
    tables: dict[str, dict[str, Any]] = {}
    for name, env in entries.items():
        tables[name] = {**acp_entry(**env), "cwd": str(repo), "workspace": "worktree", **keys}
    return write_config(tmp_path, tables)


async def host_cli(*args: str, cwd: Path, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run the installed ``subagent-host`` console script."""
    with anyio.fail_after(CLI_TIMEOUT_S):
        return await anyio.run_process(
            [CONSOLE_SCRIPT, *args], cwd=cwd, env=dict(env) if env is not None else cli_env(), check=False
        )


async def wait_until_removed(path: Path, repo: Path) -> None:
    """Poll until the worktree ``path`` is gone and ``repo`` no longer lists it (a session's worktree is removed in
    the host's task group, and ``git worktree remove`` deletes the directory before its admin entry, so the
    directory alone can be gone while git still lists it; callers bound this with ``fail_after``)."""
    while True:
        if not await anyio.Path(path).exists() and str(path) not in await anyio.to_thread.run_sync(
            worktree_paths, repo
        ):
            return
        await anyio.sleep(0.02)


async def sigkill_host_once_ready(*args: str, ready: Path, cwd: Path, until: Callable[[], bool] | None = None) -> None:
    """Start the console script with ``args``; once its child wrote ``ready`` (and ``until`` holds, when given),
    SIGKILL the host and wait until the keeper ended the host's fake agents (bounded by ``CLI_TIMEOUT_S``)."""
    process = await anyio.open_process(
        [CONSOLE_SCRIPT, *args],
        cwd=cwd,
        env=cli_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with anyio.fail_after(CLI_TIMEOUT_S):
            await wait_for_file(ready)
            while until is not None:  # polled: the condition is a file another process writes
                if until():
                    break
                await anyio.sleep(0.01)
            agents = fake_agents(process.pid)
            os.kill(process.pid, signal.SIGKILL)
            await process.wait()
            for agent in agents:  # the keeper ends the child of the dead host
                await wait_until_gone(agent.pid)
    finally:
        if process.returncode is None:  # not killed (the wait for ready ran out): never leave the host running
            process.kill()
        with anyio.CancelScope(shield=True):
            await process.aclose()


def session_worktree_config(
    tmp_path: Path,
    repo: Path,
    *,
    idle_ms: float = 300000,
    workspace: str = "worktree",
    max_warm: int = DEFAULT_MAX_WARM_SESSIONS,
    setup: list[str] | None = None,
    **env: str,
) -> HostConfig:
    """A ``child`` entry on the fake agent in ``repo`` whose task is its file edits (``MOCK_FS_OPS_FROM_PROMPT``),
    echoing its cwds and resuming sessions, in ``workspace``; ``env`` adds ``MOCK_*`` switches."""
    entry: dict[str, Any] = {
        "kind": "acp",
        "command": PYTHON,
        "args": [str(FAKE_ACP_AGENT)],
        "dispose_eof_grace_ms": 300,
        "dispose_grace_ms": 300,
        "cwd": str(repo),
        "workspace": workspace,
        "session_idle_ms": idle_ms,
        "env": {
            "MOCK_FS_OPS_FROM_PROMPT": "1",
            "MOCK_ECHO_CWD": "1",
            "MOCK_SESSION_RESUME": "1",
            "MOCK_SESSION_DIR": str(tmp_path),
            **env,
        },
    }
    if setup is not None:
        entry["setup"] = setup
    return parse_config({"providers": {"child": entry}, "host": {"max_warm_sessions": max_warm}})


async def call_child(host: Host, arguments: dict[str, Any], signal: CancelSignal | None = None) -> ToolResult:
    """``delegate_child`` with ``arguments`` (a fresh signal unless one is given)."""
    return await host.execute("delegate_child", arguments, signal=signal or CancelController().signal)


def success_value(result: ToolResult) -> dict[str, Any]:
    """The value of a successful delegation."""
    assert isinstance(result, ToolSuccess), result
    assert isinstance(result.value, dict)
    return result.value
