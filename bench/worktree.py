"""Worktree workspaces against the bare git commands they are built from, interleaved in one run.

A generated repository of 10 000 files (100 directories) with 200 dirty or untracked files (100 modified tracked
files, 100 untracked). Two measurements, each next to its floor:

* **create**: ``Workspaces.acquire`` (git version, probe, untracked size, baseline through a private copy of the
  index: ``add -A``, ``write-tree``, ``commit-tree``; ``worktree add --lock`` on a new branch; ``.worktreeinclude``)
  vs the floor ``cp .git/index`` + ``GIT_INDEX_FILE=copy git add -A`` + ``git worktree add``;
* **delta** after a run that changed 50 files: ``Workspaces.after_turn`` (``add -A``, ``write-tree``,
  ``commit-tree``, ``update-ref``, the binary patch to a file, name-status and numstat) vs the floor ``git add -A`` +
  ``git diff --cached --binary <base>`` to a file in an identical worktree.

Prints the median wall (min–max) per side, the ratio, and the median CPU of this process and of its git children
(``getrusage``; the children's is the steadier figure on a shared machine). ``BENCH_RUNS`` (default 9) runs, the
sides' order alternating. Before every measured side the page cache's dirty pages are written back (``os.sync()``,
untimed): checking out 10 000 files leaves seconds of writeback behind, which would otherwise land on whichever side
runs next. Before the run's changes both worktrees' indexes are refreshed (untimed, ``_settle``). Target: ≤ 1.5×
the floor for each.
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from host.workspace import Workspace, Workspaces

RUNS = int(os.environ.get("BENCH_RUNS", "9"))
FILES = 10_000
DIRS = 100
DIRTY = 100
UNTRACKED = 100
CHANGED = 50
_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@localhost",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@localhost",
}


def _git(cwd: Path, *args: str, index: str | None = None, stdout: int | None = None) -> None:
    env = dict(_ENV, GIT_INDEX_FILE=index) if index else _ENV
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, stdout=stdout or subprocess.DEVNULL)


def _generate(root: Path) -> Path:
    repo = root / "repo"
    for number in range(FILES):
        directory = repo / f"d{number % DIRS:03d}"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"f{number:05d}.txt").write_text(f"file {number}\n" + "line\n" * 20)
    _git(repo.parent, "init", "-q", "-b", "main", str(repo))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "generated")
    for number in range(DIRTY):
        path = repo / f"d{number % DIRS:03d}" / f"f{number:05d}.txt"
        path.write_text(path.read_text() + "dirty\n")
    for number in range(UNTRACKED):
        (repo / f"d{number % DIRS:03d}" / f"untracked{number}.txt").write_text("new\n")
    return repo


def _settle(*worktrees: Path) -> None:
    """Refresh both worktrees' indexes a second after their checkouts (untimed). A checkout's index holds the files
    written in its last second as racily clean (git re-hashes them at the next refresh); how many that is depends on
    how fast that checkout went, which would make each side's delta differ by up to a few hundred re-hashed files."""
    time.sleep(1.1)
    for worktree in worktrees:
        _git(worktree, "update-index", "-q", "--refresh")


def _change(worktree: Path) -> None:
    for number in range(CHANGED):
        path = worktree / f"d{(number * 7) % DIRS:03d}" / f"f{number * 7 + 1000:05d}.txt"
        path.write_text(path.read_text() + "child edit\n")


def _cpu() -> tuple[float, float]:
    """(this process, its reaped children): user + system seconds."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


async def _timed(action: Callable[[], Awaitable[None]]) -> tuple[float, float, float]:
    """Wall, own CPU and git children's CPU of ``action``, after writing back the dirty pages (untimed)."""
    await anyio.to_thread.run_sync(os.sync)
    (own, children), wall = _cpu(), time.perf_counter()
    await action()
    wall = time.perf_counter() - wall
    own_after, children_after = _cpu()
    return wall, own_after - own, children_after - children


def _floor_create(repo: Path, scratch: Path, path: Path) -> None:
    index = scratch / "floor-index"
    shutil.copyfile(repo / ".git" / "index", index)
    _git(repo, "add", "-A", index=str(index))
    _git(repo, "worktree", "add", "-q", "--detach", str(path), "HEAD")


def _floor_delta(worktree: Path, base: str, patch: Path) -> None:
    _git(worktree, "add", "-A")
    with open(patch, "wb") as file:
        _git(worktree, "diff", "--cached", "--binary", base, stdout=file.fileno())


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:7.1f} ms ({min(values) * 1000:.0f}–{max(values) * 1000:.0f})"


def _line(name: str, results: dict[str, list[float]]) -> None:
    host, floor = results[name + " h"], results[name + " f"]
    host_git, floor_git = results[name + " h git"], results[name + " f git"]
    ratio = statistics.median(host) / statistics.median(floor)
    print(
        f"{name:6s} host {_ms(host)}  floor {_ms(floor)}  ratio {ratio:.2f}×"
        f"\n       CPU: git children host {_ms(host_git)}  floor {_ms(floor_git)}"
        f"  ratio {statistics.median(host_git) / statistics.median(floor_git):.2f}×;"
        f"  this process host {statistics.median(results[name + ' h own']) * 1000:.1f} ms"
        f"  floor {statistics.median(results[name + ' f own']) * 1000:.1f} ms"
    )


async def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-worktree-") as temporary:
        root = Path(temporary)
        repo = _generate(root)
        state = root / "state"
        workspaces = Workspaces(state)
        await workspaces.acquire(str(repo), "warmup")  # the version check and the disk cache, untimed
        results: dict[str, list[float]] = {}

        def keep(name: str, measured: tuple[float, float, float]) -> None:
            for suffix, value in zip(("", " own", " git"), measured, strict=True):
                results.setdefault(name + suffix, []).append(value)

        load = os.getloadavg()[0]
        for run in range(RUNS):
            floor_path = root / f"floor-{run}"
            box: list[Workspace] = []

            async def host_create(run: int = run, box: list[Workspace] = box) -> None:
                box.append(await workspaces.acquire(str(repo), f"bench-{run}"))

            async def floor_create(floor_path: Path = floor_path) -> None:
                await anyio.to_thread.run_sync(_floor_create, repo, root, floor_path)

            sides = [("h", host_create), ("f", floor_create)]
            for side, action in sides if run % 2 == 0 else reversed(sides):
                keep("create " + side, await _timed(action))
            workspace = box[0]
            _settle(Path(workspace.path), floor_path)
            _change(Path(workspace.path))
            _change(floor_path)

            async def host_delta(workspace: Workspace = workspace, run: int = run) -> None:
                await workspaces.after_turn(workspace, f"bench-{run}")

            async def floor_delta(floor_path: Path = floor_path, run: int = run) -> None:
                await anyio.to_thread.run_sync(_floor_delta, floor_path, "HEAD", root / f"floor-{run}.patch")

            sides = [("h", host_delta), ("f", floor_delta)]
            for side, action in sides if run % 2 == 0 else reversed(sides):
                keep("delta " + side, await _timed(action))
            await workspaces.release(workspace, keep_branch=False)
            _git(repo, "worktree", "remove", "--force", str(floor_path))
        print(
            f"{FILES} files, {DIRTY} dirty + {UNTRACKED} untracked, {CHANGED} changed by the run; {RUNS} runs;"
            f" load average {load:.1f} → {os.getloadavg()[0]:.1f}"
        )
        _line("create", results)
        _line("delta", results)


if __name__ == "__main__":
    anyio.run(main)
