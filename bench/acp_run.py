"""ACP provider benchmarks (run as ``python bench/acp_run.py``; prints results, asserts nothing).

1. Run overhead: a full host run of the echo agent (spawn, ``initialize``, ``session/new``, prompt, dispose) vs the
   stdlib floor doing the same exchange on blocking pipes; medians over N interleaved runs, target <= 1.10x.
2. Streaming: 100 000 one-character chunks from ``bench/_minimal_agent.py`` through the provider vs the floor
   reading the same agent's real pipe with a ``json.loads`` line loop; median rates over STREAM_RUNS interleaved
   runs, target >= 0.6x.

Every wall time is printed with the client CPU per run (``getrusage(RUSAGE_SELF)``, children excluded), the number
that barely moves with the machine's load. ``BENCH_RUNS``, ``BENCH_CHUNKS`` and ``BENCH_STREAM_RUNS`` tune it.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench.vs_acp_sdk import AGENTS, PROMPT, cpu_s, floor_run, host_run  # noqa: E402

RUNS = int(os.environ.get("BENCH_RUNS", "15"))
CHUNKS = int(os.environ.get("BENCH_CHUNKS", "100000"))
STREAM_RUNS = int(os.environ.get("BENCH_STREAM_RUNS", "3"))
ECHO, MINIMAL = AGENTS


async def timed(call: Callable[[], Awaitable[object]], walls: list[float], cpus: list[float]) -> None:
    cpu, wall = cpu_s(), time.perf_counter()
    await call()
    walls.append(time.perf_counter() - wall)
    cpus.append(cpu_s() - cpu)


async def main() -> None:
    """Run both benchmarks and print their ratios."""
    with tempfile.TemporaryDirectory() as cwd:

        async def floor() -> None:
            assert floor_run(ECHO, cwd) == PROMPT

        async def host() -> None:
            assert await host_run(ECHO, cwd) == PROMPT

        await floor()  # warm-up: imports, first interpreter start
        await host()
        walls: dict[str, list[float]] = {"floor": [], "host": []}
        cpus: dict[str, list[float]] = {"floor": [], "host": []}
        for _ in range(RUNS):
            await timed(floor, walls["floor"], cpus["floor"])
            await timed(host, walls["host"], cpus["host"])
        for name in ("floor", "host"):
            print(
                f"run overhead: {name} median {statistics.median(walls[name]) * 1000:.1f} ms wall, "
                f"{statistics.median(cpus[name]) * 1000:.2f} ms client CPU per run"
            )
        overhead = statistics.median(walls["host"]) / statistics.median(walls["floor"])
        cpu_ratio = statistics.median(cpus["host"]) / statistics.median(cpus["floor"])
        print(f"run overhead ratio: {overhead:.3f}x wall (target <= 1.10x), {cpu_ratio:.2f}x CPU, over {RUNS} runs")

        expected = "x" * CHUNKS

        async def floor_stream() -> None:
            assert floor_run(MINIMAL, cwd, "stream", CHUNKS) == expected, "chunks were lost"

        async def host_stream() -> None:
            assert await host_run(MINIMAL, cwd, "stream", CHUNKS) == expected, "chunks were lost"

        walls = {"floor": [], "host": []}
        cpus = {"floor": [], "host": []}
        # Interleaved, so a load swing on a shared machine hits both sides alike; medians, not best cases.
        for _ in range(STREAM_RUNS):
            await timed(host_stream, walls["host"], cpus["host"])
            await timed(floor_stream, walls["floor"], cpus["floor"])
        rates = {name: CHUNKS / statistics.median(walls[name]) for name in walls}
        for name in ("floor", "host"):
            print(
                f"streaming: {name} {rates[name]:,.0f} chunks/s, "
                f"{statistics.median(cpus[name]) * 1000:.0f} ms client CPU per run"
            )
        print(
            f"streaming ratio: {rates['host'] / rates['floor']:.3f}x of the floor's rate (target >= 0.6x), "
            f"medians of {STREAM_RUNS} interleaved runs (spawn and handshake included on both sides)"
        )


if __name__ == "__main__":
    anyio.run(main)
