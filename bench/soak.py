"""Soak: many echo runs and background jobs through one long-lived ``Host`` (prints results, asserts nothing).

``python bench/soak.py`` runs 2000 foreground runs in waves at concurrency 64, then 1000 background jobs, against
the fake agent's echo mode, and prints runs/s, p50/p99 latency, peak RSS, RSS growth per 1000 runs after the
warm-up waves, open fds and threads at the end against the baseline, and surviving processes. ``--quick`` is a
short pass (200 runs and 100 jobs, in waves of 50). Targets: RSS growth <= 2 MiB per 1000 runs; fds and threads
back to baseline; zero survivors.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import psutil

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from host import CancelController, Host, ToolSuccess, load_config  # noqa: E402

FAKE_ACP_AGENT = REPO / "fake_runtimes" / "acp_agent.py"
CONCURRENCY = 64
WARMUP_WAVES = 2
MARKER = "SUBAGENT_HOST_SOAK_MARKER"
TARGET_GROWTH_MIB = 2.0
MIB = 1024 * 1024


def _config(directory: Path) -> Path:
    path = directory / "soak.toml"
    path.write_text(
        "\n".join(
            [
                '[providers."echo"]',
                'kind = "acp"',
                f"command = {json.dumps(sys.executable)}",
                f"args = {json.dumps([str(FAKE_ACP_AGENT)])}",
                "dispose_eof_grace_ms = 2000",
                "dispose_grace_ms = 1000",
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    return path


def _rss() -> int:
    return psutil.Process().memory_info().rss


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _survivors(marker: str) -> list[int]:
    left: list[int] = []
    for proc in psutil.process_iter():
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and proc.environ().get(MARKER) == marker:
                left.append(proc.pid)
        except psutil.Error:
            continue
    return left


async def _wave(count: int, one: Any) -> list[float]:
    latencies: list[float] = []
    limiter = anyio.Semaphore(CONCURRENCY)

    async def timed() -> None:
        async with limiter:
            started = time.perf_counter()
            await one()
            latencies.append(time.perf_counter() - started)

    async with anyio.create_task_group() as group:
        for _ in range(count):
            group.start_soon(timed)
    return latencies


async def soak(runs: int, jobs: int, wave: int) -> None:
    marker = uuid.uuid4().hex
    os.environ[MARKER] = marker  # inherited by every child: the survivor count finds even escapees
    fds_before, threads_before = _fds(), threading.active_count()
    failures = 0
    with tempfile.TemporaryDirectory() as directory:
        config = load_config(_config(Path(directory)))
        async with Host.open(config, parent_cwd=directory) as host:

            async def foreground() -> None:
                nonlocal failures
                result = await host.execute("delegate_echo", {"task": "soak"}, signal=CancelController().signal)
                failures += not isinstance(result, ToolSuccess)

            async def background() -> None:
                nonlocal failures
                started = await host.execute(
                    "delegate_echo", {"task": "soak", "run_in_background": True}, signal=CancelController().signal
                )
                if not isinstance(started, ToolSuccess) or not isinstance(started.value, dict):
                    failures += 1
                    return
                outcome = await host.wait_job(str(started.value["job_id"]))
                failures += outcome.status != "completed"

            latencies: list[float] = []
            rss_after_wave: list[int] = []
            started = time.perf_counter()
            for done in range(0, runs, wave):
                latencies += await _wave(min(wave, runs - done), foreground)
                rss_after_wave.append(_rss())
                print(f"  after {done + wave:5d} runs: RSS {rss_after_wave[-1] / MIB:7.1f} MiB", flush=True)
            elapsed = time.perf_counter() - started
            job_started = time.perf_counter()
            for done in range(0, jobs, wave):
                await _wave(min(wave, jobs - done), background)
            job_elapsed = time.perf_counter() - job_started
            rss_after_jobs = _rss()
    survivors = _survivors(marker)
    with anyio.move_on_after(3.0):
        while survivors:
            await anyio.sleep(0.05)
            survivors = _survivors(marker)
    _report(
        runs=runs,
        jobs=jobs,
        elapsed=elapsed,
        job_elapsed=job_elapsed,
        latencies=latencies,
        rss_after_wave=rss_after_wave,
        rss_after_jobs=rss_after_jobs,
        wave=wave,
        baseline=(fds_before, threads_before),
        survivors=survivors,
        failures=failures,
    )


def _report(
    *,
    runs: int,
    jobs: int,
    elapsed: float,
    job_elapsed: float,
    latencies: list[float],
    rss_after_wave: list[int],
    rss_after_jobs: int,
    wave: int,
    baseline: tuple[int, int],
    survivors: list[int],
    failures: int,
) -> None:
    ordered = sorted(latencies)
    p50 = statistics.median(ordered)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    measured = rss_after_wave[WARMUP_WAVES - 1 :] if len(rss_after_wave) > WARMUP_WAVES else rss_after_wave
    measured_runs = (len(measured) - 1) * wave
    growth = (measured[-1] - measured[0]) / MIB * 1000 / measured_runs if measured_runs else float("nan")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    fds_before, threads_before = baseline
    print(f"foreground runs:      {runs} in {elapsed:.1f}s = {runs / elapsed:.1f} runs/s (concurrency {CONCURRENCY})")
    print(f"latency:              p50 {p50 * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms")
    print(f"background jobs:      {jobs} in {job_elapsed:.1f}s = {jobs / job_elapsed:.1f} jobs/s")
    print(f"failed calls:         {failures}")
    print(f"peak RSS:             {peak:.1f} MiB")
    print(
        f"RSS growth:           {growth:+.2f} MiB per 1000 runs after {WARMUP_WAVES} warm-up waves"
        f" (target <= {TARGET_GROWTH_MIB} MiB); {rss_after_jobs / MIB:.1f} MiB after the jobs"
    )
    print(f"open fds at the end:  {_fds()} (baseline {fds_before}; target: back to baseline)")
    print(
        f"threads at the end:   {threading.active_count()} (baseline {threads_before}; target: back to baseline;"
        " idle anyio worker threads linger ~10 s)"
    )
    print(f"surviving processes:  {len(survivors)} {survivors or ''}(target 0)")


def main() -> None:
    parser = argparse.ArgumentParser(description="Soak one long-lived Host with echo runs and background jobs.")
    parser.add_argument("--quick", action="store_true", help="a short pass: 200 runs and 100 background jobs")
    args = parser.parse_args()
    runs, jobs, wave = (200, 100, 50) if args.quick else (2000, 1000, 200)
    anyio.run(soak, runs, jobs, wave)


if __name__ == "__main__":
    main()
