"""``Workspaces``: the operations a run or a session calls, over one state directory.

``acquire`` (probe, version, baseline, locked worktree, ``.worktreeinclude``) → ``setup`` → the child works in
``Workspace.cwd`` → ``after_turn`` (commit + patch + changes; every turn) → ``release`` (worktree removed; the
branch kept when the last turn left changes). ``reclaim`` salvages the worktrees of dead hosts; ``apply`` and
``delete_branches`` serve ``runs apply`` / ``changes_apply`` and ``runs prune``.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Final

import anyio

from host._exceptions import WorkspaceError
from host._files import read_regular
from host.workspace._apply import ApplyOutcome, apply_patch
from host.workspace._baseline import (
    DEFAULT_MAX_BASELINE_BYTES,
    Baseline,
    Repository,
    capture_baseline,
    probe_repository,
)
from host.workspace._changes import Changes
from host.workspace._fork import fork_start
from host.workspace._git import MAX_GIT_FACT_BYTES, RepoLocks, check_git_version, git
from host.workspace._reopen import WORKTREE_IN_USE, WORKTREE_LOST, reopen_worktree, retire_branch
from host.workspace._store import patch_path, read_changes_file, remove_run_files
from host.workspace._turn import record_turn
from host.workspace._worktree import (
    BRANCH_PREFIX,
    SetupOutcome,
    Workspace,
    branch_of,
    create_worktree,
    dead_lock_reason,
    remove_worktree,
    run_setup,
)

__all__ = ["Workspaces"]

logger = logging.getLogger(__name__)

_NO_CHANGES: Final = "run {run_id} kept no changes to apply"
_STALE_HALF_MADE_S: Final = 3600.0
"""A directory under ``worktrees/`` that never became a worktree is removed once it is this old."""


def branch_of_run(run_id: str) -> str:
    """The branch of a one-shot run (its own, shared with no other run)."""
    return BRANCH_PREFIX + run_id


def _admin_dir_of(path: Path) -> Path | None:
    """The worktree's admin directory in its repository, only when git's own back-link (``<admin>/gitdir``) names
    this worktree's ``.git`` file: the ``.git`` file lives in the worktree, so the child can rewrite it, and a path
    read from it alone must never choose where the host runs git or reach an error text."""
    try:
        admin = Path(os.fsdecode(read_regular(path / ".git", MAX_GIT_FACT_BYTES)).removeprefix("gitdir:").strip())
        linked = Path(os.fsdecode(read_regular(admin / "gitdir", MAX_GIT_FACT_BYTES)).strip())
        return admin if admin.is_absolute() and os.path.samefile(linked, path / ".git") else None
    except (OSError, ValueError):
        return None


def _remove_if_stale(path: Path) -> None:
    if time.time() - path.stat().st_mtime > _STALE_HALF_MADE_S:
        shutil.rmtree(path, ignore_errors=True)


class Workspaces:
    """The worktree operations over ``<state_dir>/worktrees/`` and ``<state_dir>/runs/``."""

    def __init__(self, state_dir: Path) -> None:
        self._root = state_dir / "worktrees"
        self._runs = state_dir / "runs"
        self._scratch = self._root / ".scratch"
        self._locks = RepoLocks(self._root / ".locks")

    @property
    def runs_dir(self) -> Path:
        """Where patches and changes files are kept."""
        return self._runs

    async def acquire(self, cwd: str, owner: str, *, max_baseline_bytes: int = DEFAULT_MAX_BASELINE_BYTES) -> Workspace:
        """A new locked worktree for ``owner`` from the parent's tree at ``cwd``.

        Raises:
            WorkspaceError: git missing or too old, no repository, a bare one, a merge or rebase in progress,
                untracked content over ``max_baseline_bytes``, or git failed; nothing is left behind.
            ValueError: ``owner`` cannot name a branch and a directory.
        """
        branch_of(owner)
        await check_git_version()
        repo = await probe_repository(cwd)
        return await self._acquire_in(repo, owner, max_baseline_bytes)

    async def _acquire_in(self, repo: Repository, owner: str, max_baseline_bytes: int) -> Workspace:
        baseline = await capture_baseline(repo, self._scratch, max_baseline_bytes)
        self._root.mkdir(mode=0o700, parents=True, exist_ok=True)
        return await create_worktree(repo, baseline, owner, self._root / owner, self._locks)

    async def fork(
        self, source: Workspace, cwd: str, owner: str, *, max_baseline_bytes: int = DEFAULT_MAX_BASELINE_BYTES
    ) -> Workspace:
        """A new locked worktree for ``owner``, the fork of the session whose worktree ``source`` describes (its
        session file's facts): branch ``subagent-host/<owner>`` at the tip of the source's branch (its baseline
        commit when the branch is gone), with the source's baseline, so the fork's delta is cumulative from the
        same point as the source's. When ``cwd`` is in another repository, or neither the branch nor the baseline
        is left: a fresh worktree from the parent's tree at ``cwd``, as ``acquire`` makes.

        Raises:
            WorkspaceError: as ``acquire`` (the baseline's size only when the parent's tree is captured); nothing
                is left behind, and the source's worktree and branch are never written.
            ValueError: ``owner`` cannot name a branch and a directory.
        """
        branch_of(owner)
        await check_git_version()
        repo = await probe_repository(cwd)
        start = await fork_start(source, repo)
        if start is None:
            logger.info("subagent-host: fork %s of session %s starts from the parent's tree", owner, source.owner)
            return await self._acquire_in(repo, owner, max_baseline_bytes)
        self._root.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = self._root / owner
        workspace = await create_worktree(repo, source.baseline, owner, path, self._locks, start=start.commit)
        workspace.changed = start.tree != source.baseline.tree
        logger.info("subagent-host: fork %s of session %s starts from its %s", owner, source.owner, start.origin)
        return workspace

    async def setup(
        self, workspace: Workspace, argv: Sequence[str], *, env: Mapping[str, str], timeout_ms: float
    ) -> SetupOutcome:
        """Run the entry's ``setup`` argv in the worktree; its output is kept on ``workspace.setup_output``."""
        outcome = await run_setup(argv, cwd=workspace.cwd, env=env, timeout_s=timeout_ms / 1000)
        workspace.setup_output = outcome.output
        return outcome

    async def after_turn(self, workspace: Workspace, run_id: str) -> Changes | None:
        """Commit the turn on the branch and keep its delta as ``<run_id>.patch``; ``None`` when nothing changed."""
        return await record_turn(workspace, run_id, self._runs, self._locks)

    async def release(self, workspace: Workspace, *, keep_branch: bool | None = None) -> None:
        """Remove the worktree; the branch stays when ``keep_branch`` (default: the last turn left changes)."""
        keep = workspace.changed if keep_branch is None else keep_branch
        with anyio.CancelScope(shield=True):
            await remove_worktree(workspace, self._locks, keep_branch=keep)

    def _branches_kept(self, pruned: set[str]) -> set[str]:
        """The branches the kept changes files of runs not in ``pruned`` name."""
        kept: set[str] = set()
        try:
            names = os.listdir(self._runs)
        except OSError:
            return kept
        for name in names:
            run_id = name.removesuffix(".changes.json")
            if run_id != name and run_id not in pruned:
                stored = read_changes_file(self._runs, run_id)
                if stored is not None:
                    kept.add(stored.changes.branch)
        return kept

    async def reopen(self, saved: Workspace) -> Workspace:
        """A session's worktree again, as ``saved`` (the facts its session file keeps) describes it: checked out at
        ``<state>/worktrees/<owner>`` on its branch, locked for this host. A leftover of a dead host there is
        salvaged first (as ``reclaim`` does).

        Raises:
            WorkspaceError: ``worktree-in-use`` (a live host holds it), ``worktree-lost`` (the repository, the
                branch and the baseline are gone), git missing or failed; nothing is left behind.
            ValueError: ``saved.owner`` cannot name a branch and a directory.
        """
        branch_of(saved.owner)
        path = self._root / saved.owner
        if Path(saved.path) != path:  # the file names another state directory's worktree
            raise WorkspaceError(
                WORKTREE_LOST.format(owner=saved.owner, branch=saved.branch, repo=saved.repo.toplevel),
                "worktree-lost",
            )
        await check_git_version()
        if (path / ".git").is_file():
            if not await self._reclaim_one(path):
                raise WorkspaceError(WORKTREE_IN_USE.format(owner=saved.owner), "worktree-in-use")
        elif path.exists():
            await anyio.to_thread.run_sync(shutil.rmtree, path, True)  # a directory that never became a worktree
        self._root.mkdir(mode=0o700, parents=True, exist_ok=True)
        return await reopen_worktree(saved, self._locks)

    async def retire(self, saved: Workspace) -> bool:
        """Close a session's worktree that this host does not hold: a dead host's leftover is salvaged and removed,
        then the branch is deleted unless it holds changes. ``False`` (nothing done) when a live host holds it.

        Raises:
            WorkspaceError: git failed.
        """
        path = self._root / saved.owner
        if (path / ".git").is_file() and not await self._reclaim_one(path):
            return False
        await retire_branch(saved, self._locks)
        return True

    async def reclaim(self) -> list[str]:
        """Salvage and remove every worktree whose lock names a dead host: its delta is kept as
        ``<owner>.patch`` + branch (never applied), then the worktree is removed. Returns the owners reclaimed."""
        reclaimed: list[str] = []
        try:
            entries = [entry for entry in os.scandir(self._root) if entry.is_dir() and not entry.name.startswith(".")]
        except FileNotFoundError:
            return reclaimed
        for entry in entries:
            try:
                if await self._reclaim_one(Path(entry.path)):
                    reclaimed.append(entry.name)
            except (WorkspaceError, OSError, ValueError):  # one broken leftover must not stop the others
                logger.warning("subagent-host: reclaiming worktree %s failed", entry.name, exc_info=True)
        return reclaimed

    async def _reclaim_one(self, path: Path) -> bool:
        dotgit = path / ".git"
        if not dotgit.is_file():
            _remove_if_stale(path)
            return False
        admin = _admin_dir_of(path)
        if admin is None:
            return False  # not a worktree git links back to (the child may have rewritten its .git file)
        try:
            reason = read_regular(admin / "locked", MAX_GIT_FACT_BYTES).decode()
        except (OSError, UnicodeDecodeError):
            return False
        base = dead_lock_reason(reason, path)
        if base is None:
            return False
        common = str(admin.parent.parent)
        async with self._locks.hold(common):
            if not (admin / "locked").exists():  # another host reclaimed it meanwhile
                return False
        tree = (await git(["rev-parse", base + "^{tree}"], cwd=str(path))).stdout.decode("ascii").strip()
        toplevel = (await git(["rev-parse", "--show-toplevel"], cwd=common + "/..", check=False)).stdout
        repo = Repository(
            toplevel=os.fsdecode(toplevel.strip()) or os.path.dirname(common),
            common_dir=common,
            git_dir=str(admin),
            prefix="",
            head=None,
        )
        workspace = Workspace(
            owner=path.name, repo=repo, path=str(path), branch=branch_of(path.name), baseline=Baseline(base, tree)
        )
        await record_turn(workspace, path.name, self._runs, self._locks)
        await self.release(workspace)
        return True

    async def apply(self, run_id: str, *, check_only: bool = False) -> ApplyOutcome:
        """Three-way apply the kept patch of ``run_id`` to its repository's current working tree (all or nothing).

        Raises:
            WorkspaceError: the run kept no changes (``no-changes-recorded``), or the repository is unusable.
        """
        stored = read_changes_file(self._runs, run_id)
        patch = patch_path(self._runs, run_id)
        if stored is None or not patch.is_file():
            raise WorkspaceError(_NO_CHANGES.format(run_id=run_id), "no-changes-recorded")
        return await apply_patch(stored.repo, patch, stored.changes.files, self._scratch, check_only=check_only)

    async def delete_branches(self, run_ids: Iterable[str]) -> None:
        """Delete the branches (and the patch and changes files) of runs being pruned. A session's branch is shared
        by its turns: it stays while a kept changes file of another run names it."""
        pruned = list(run_ids)
        shared: set[str] | None = None
        for run_id in pruned:
            stored = read_changes_file(self._runs, run_id)
            branch = stored.changes.branch if stored is not None else ""
            if stored is not None and branch != branch_of_run(run_id):
                shared = shared if shared is not None else self._branches_kept(set(pruned))
                if branch in shared:
                    remove_run_files(self._runs, run_id)
                    continue
            if stored is not None and stored.changes.branch.startswith("subagent-host/"):
                try:
                    repo = await probe_repository(stored.repo)
                    async with self._locks.hold(repo.common_dir):
                        await git(["branch", "-D", stored.changes.branch], cwd=repo.toplevel, check=False)
                except WorkspaceError:
                    logger.warning("subagent-host: deleting the branch of run %s failed", run_id, exc_info=True)
            remove_run_files(self._runs, run_id)
