"""Worktree workspaces against the bare git commands they are built from, interleaved in one run.

A generated repository of 10 000 files (100 directories) with 200 dirty or untracked files (100 modified tracked
files, 100 untracked). Two measurements, each next to its floor:

* **create**: ``Workspaces.acquire`` (git version, probe, untracked size, baseline through a private copy of the
  index: ``add -A``, ``write-tree``, ``commit-tree``; ``worktree add --lock`` on a new branch; ``.worktreeinclude``)
  vs the floor ``cp .git/index`` + ``GIT_INDEX_FILE=copy git add -A`` + ``git worktree add``;
* **delta** after a run that changed 50 files: ``Workspaces.after_turn`` (``add -A``, ``write-tree``,
  ``commit-tree``, ``update-ref``, the binary patch to a file, name-status and numstat) vs the floor ``git add -A`` +
  ``git diff --cached --binary <base>`` to a file in an identical worktree.

Prints the median wall (min–max) per side, the ratio, and the CPU of this process and of its git children
(``getrusage``). ``BENCH_RUNS`` (default 5). Target: ≤ 1.5× the floor for each.
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

RUNS = int(os.environ.get("BENCH_RUNS", "5"))
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


def _change(worktree: Path) -> None:
    for number in range(CHANGED):
        path = worktree / f"d{(number * 7) % DIRS:03d}" / f"f{number * 7 + 1000:05d}.txt"
        path.write_text(path.read_text() + "child edit\n")


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


async def _timed(action: Callable[[], Awaitable[None]]) -> tuple[float, float]:
    cpu, wall = _cpu(), time.perf_counter()
    await action()
    return time.perf_counter() - wall, _cpu() - cpu


def _floor_create(repo: Path, scratch: Path, path: Path) -> None:
    index = scratch / "floor-index"
    shutil.copyfile(repo / ".git" / "index", index)
    _git(repo, "add", "-A", index=str(index))
    _git(repo, "worktree", "add", "-q", "--detach", str(path), "HEAD")


def _floor_delta(worktree: Path, base: str, patch: Path) -> None:
    _git(worktree, "add", "-A")
    with open(patch, "wb") as file:
        _git(worktree, "diff", "--cached", "--binary", base, stdout=file.fileno())


def _line(name: str, host: list[float], floor: list[float], host_cpu: list[float], floor_cpu: list[float]) -> None:
    ratio = statistics.median(host) / statistics.median(floor)
    print(
        f"{name:7s} host {statistics.median(host) * 1000:8.1f} ms ({min(host) * 1000:.0f}–{max(host) * 1000:.0f})"
        f"  floor {statistics.median(floor) * 1000:8.1f} ms ({min(floor) * 1000:.0f}–{max(floor) * 1000:.0f})"
        f"  ratio {ratio:.2f}×  CPU host {statistics.median(host_cpu) * 1000:.0f} ms"
        f" floor {statistics.median(floor_cpu) * 1000:.0f} ms"
    )


async def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-worktree-") as temporary:
        root = Path(temporary)
        repo = _generate(root)
        state = root / "state"
        workspaces = Workspaces(state)
        await workspaces.acquire(str(repo), "warmup")  # the version check and the disk cache, untimed
        results: dict[str, list[float]] = {key: [] for key in ("ch", "cf", "chc", "cfc", "dh", "df", "dhc", "dfc")}
        for run in range(RUNS):
            floor_path = root / f"floor-{run}"
            box: list[Workspace] = []

            async def host_create(run: int = run, box: list[Workspace] = box) -> None:
                box.append(await workspaces.acquire(str(repo), f"bench-{run}"))

            async def floor_create(floor_path: Path = floor_path) -> None:
                await anyio.to_thread.run_sync(_floor_create, repo, root, floor_path)

            sides = [("h", host_create), ("f", floor_create)]
            for side, action in sides if run % 2 == 0 else reversed(sides):
                wall, cpu = await _timed(action)
                results["c" + side].append(wall)
                results["c" + side + "c"].append(cpu)
            workspace = box[0]
            _change(Path(workspace.path))
            _change(floor_path)

            async def host_delta(workspace: Workspace = workspace, run: int = run) -> None:
                await workspaces.after_turn(workspace, f"bench-{run}")

            async def floor_delta(floor_path: Path = floor_path, run: int = run) -> None:
                await anyio.to_thread.run_sync(_floor_delta, floor_path, "HEAD", root / f"floor-{run}.patch")

            sides = [("h", host_delta), ("f", floor_delta)]
            for side, action in sides if run % 2 == 0 else reversed(sides):
                wall, cpu = await _timed(action)
                results["d" + side].append(wall)
                results["d" + side + "c"].append(cpu)
            await workspaces.release(workspace, keep_branch=False)
            _git(repo, "worktree", "remove", "--force", str(floor_path))
        print(f"{FILES} files, {DIRTY} dirty + {UNTRACKED} untracked, {CHANGED} changed by the run; {RUNS} runs")
        _line("create", results["ch"], results["cf"], results["chc"], results["cfc"])
        _line("delta", results["dh"], results["df"], results["dhc"], results["dfc"])


if __name__ == "__main__":
    anyio.run(main)
