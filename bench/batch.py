"""Batch benchmarks (run as ``python bench/batch.py [--memory] [--ray]``; prints results, asserts nothing).

1. Throughput: ``BENCH_ITEMS`` (1000) items on the built-in echo with 8 workers through ``open_batch`` and the
   local executor (results, run records and the summary written to a temporary batch directory, made outside the
   timing; every rep's directory is removed after the last rep) vs the floor: a
   stdlib loop spawning the same echo child (``python -I -S host/_echo_agent.py``) as many times with 8 threads
   and doing the same exchange (initialize, session/new, prompt, stdin EOF, wait). ``BENCH_REPS`` (3) interleaved
   repetitions; median items/s (min-max) and this process's CPU per item; target >= 0.8x the floor.
2. ``--memory``: the driver's RSS over ``BENCH_MEMORY_ITEMS`` (10 000) items: before, after the first 1000, at the
   end, and its growth (target <= 50 MiB).
3. ``--ray``: the same items on a local Ray cluster (``ray.init(num_cpus=2)``, its start excluded), printed as
   wall ms per item next to the local executor's and the floor's.
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import psutil

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from host import BatchItem, Executor, LocalExecutor, RayExecutor, load_config, open_batch  # noqa: E402

ITEMS = int(os.environ.get("BENCH_ITEMS", "1000"))
REPS = int(os.environ.get("BENCH_REPS", "3"))
MEMORY_ITEMS = int(os.environ.get("BENCH_MEMORY_ITEMS", "10000"))
WORKERS = 8
AGENT = REPO / "host" / "_echo_agent.py"


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def children_cpu_s() -> float:
    """CPU of reaped children: the echo agents (and the host's keeper, reaped when the batch's host closes)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _floor_one(cwd: str) -> None:
    child = subprocess.Popen(
        [sys.executable, "-I", "-S", str(AGENT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True
    )
    assert child.stdin is not None and child.stdout is not None

    def request(request_id: int, method: str, params: dict[str, object]) -> dict[str, Any]:
        assert child.stdin is not None and child.stdout is not None
        line = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}) + "\n"
        child.stdin.write(line.encode())
        child.stdin.flush()
        while True:
            message = json.loads(child.stdout.readline())
            if message.get("id") == request_id:
                return message

    request(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    session = request(1, "session/new", {"cwd": cwd, "mcpServers": []})["result"]
    request(2, "session/prompt", {"sessionId": session["sessionId"], "prompt": [{"type": "text", "text": "hello"}]})
    child.stdin.close()
    child.wait()
    child.stdout.close()


def floor(items: int, cwd: str) -> None:
    with ThreadPoolExecutor(WORKERS) as pool:
        list(pool.map(_floor_one, [cwd] * items))


def _items(count: int) -> list[BatchItem]:
    return [BatchItem(id=f"item-{n}", task="hello") for n in range(count)]


async def batch(items: list[BatchItem], executor: Executor, outdir: str, on_result: Any = None) -> int:
    completed = 0
    async with open_batch(items, outdir=outdir, config=load_config(None), executor=executor) as run:
        async for result in run:
            completed += result.line["stop_reason"] == "completed"
            if on_result is not None:
                on_result(completed)
    return completed


async def throughput(ray: bool) -> None:
    items = _items(ITEMS)
    cwd = os.getcwd()
    sides: dict[str, list[tuple[float, float, float]]] = {"floor": [], "local": []}
    if ray:
        sides["ray"] = []
    load_before = os.getloadavg()[0]
    # Every batch directory is made outside the timing and all are removed after the last rep: the floor writes no
    # files, removing thousands of records is not part of running a batch, and on an ext4 without a journal (this
    # project's development machine) every file created within minutes of a mass removal pays for a scan of the
    # recently deleted inodes, so a removal between reps would slow the next rep's records (a user's batch does not
    # follow the removal of the last one).
    with tempfile.TemporaryDirectory() as parent:
        for rep in range(REPS):
            for side in sides:
                outdir = tempfile.mkdtemp(dir=parent)
                cpu, children, wall = cpu_s(), children_cpu_s(), time.perf_counter()
                if side == "floor":
                    await anyio.to_thread.run_sync(floor, ITEMS, cwd)
                elif side == "local":
                    assert await batch(items, LocalExecutor(WORKERS), outdir) == ITEMS
                else:
                    assert await batch(items, RayExecutor(WORKERS), outdir) == ITEMS
                sides[side].append((time.perf_counter() - wall, cpu_s() - cpu, children_cpu_s() - children))
                print(f"  rep {rep + 1} {side}: {sides[side][-1][0]:.2f} s", flush=True)
    print(
        f"\n{ITEMS} echo items, {WORKERS} workers, {REPS} interleaved reps "
        f"(load {load_before:.1f} before, {os.getloadavg()[0]:.1f} after)"
    )
    floor_rate = statistics.median(ITEMS / wall for wall, _, _ in sides["floor"])
    floor_total = statistics.median(c + k for _, c, k in sides["floor"]) / ITEMS * 1000
    print("(total CPU = this process + its reaped children; on a saturated machine throughput follows it)")
    for side, samples in sides.items():
        rates = [ITEMS / wall for wall, _, _ in samples]
        per_item = [wall / ITEMS * 1000 for wall, _, _ in samples]
        cpu = statistics.median(c for _, c, _ in samples) / ITEMS * 1000
        total = statistics.median(c + k for _, c, k in samples) / ITEMS * 1000
        # Ray's workers are the cluster's processes, not this one's children: their CPU is not seen here.
        by_cpu = "n/a (workers are not our children)" if side == "ray" else f"{floor_total / total:.2f}x"
        print(
            f"{side:6} {statistics.median(rates):7.1f} items/s ({min(rates):.1f}-{max(rates):.1f}) "
            f"{statistics.median(per_item):6.2f} ms/item wall  {cpu:5.2f} ms CPU/item (this process)  "
            f"{total:5.2f} ms total CPU/item  {statistics.median(rates) / floor_rate:.2f}x floor wall, "
            f"{by_cpu} floor by total CPU"
        )


async def memory() -> None:
    process = psutil.Process()
    marks: dict[str, float] = {"before": process.memory_info().rss / 2**20}

    def on_result(done: int) -> None:
        if done == 1000:
            marks["after 1000"] = process.memory_info().rss / 2**20

    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as outdir:
        assert await batch(_items(MEMORY_ITEMS), LocalExecutor(WORKERS), outdir, on_result) == MEMORY_ITEMS
    marks["end"] = process.memory_info().rss / 2**20
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"\n{MEMORY_ITEMS} items in {time.perf_counter() - started:.1f} s; driver RSS MiB: "
        + ", ".join(f"{name} {value:.1f}" for name, value in marks.items())
        + f", peak {peak:.1f}; growth {marks['end'] - marks['before']:.1f} MiB "
        f"({marks['end'] - marks.get('after 1000', marks['before']):.1f} after the first 1000)"
    )


def main() -> None:
    ray = "--ray" in sys.argv
    ray_module: Any = importlib.import_module("ray") if ray else None
    if ray:
        started = time.perf_counter()
        ray_module.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        print(f"ray.init: {time.perf_counter() - started:.1f} s (excluded)")
    try:
        if "--memory" in sys.argv:
            anyio.run(memory)
        else:
            anyio.run(throughput, ray)
    finally:
        if ray:
            ray_module.shutdown()


if __name__ == "__main__":
    main()
