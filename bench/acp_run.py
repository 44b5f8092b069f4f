"""ACP provider benchmarks (run as ``python bench/acp_run.py``; prints results, asserts nothing).

1. Run overhead: a full host run of the echo agent (spawn, ``initialize``, ``session/new``, prompt, dispose) vs a
   bare stdlib floor doing the same exchange; ratio of medians over N interleaved runs, target <= 1.15x.
2. Streaming: 100 000 one-character chunks through the provider vs a raw ``json.loads`` line loop over the same
   bytes; ratio of median rates over STREAM_RUNS interleaved runs of each, target >= 0.4x.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench._acp_stream_agent import stream_lines  # noqa: E402
from host._contracts import SubagentRequest  # noqa: E402
from host.acp_provider import AcpRunSpec, start_acp_run  # noqa: E402
from host.cancel import CancelController  # noqa: E402

FAKE_ACP_AGENT = REPO / "fake_runtimes" / "acp_agent.py"
STREAM_AGENT = REPO / "bench" / "_acp_stream_agent.py"
RUNS = int(os.environ.get("BENCH_RUNS", "15"))
CHUNKS = int(os.environ.get("BENCH_CHUNKS", "100000"))
STREAM_RUNS = int(os.environ.get("BENCH_STREAM_RUNS", "3"))
PROMPT = "echo me"


def _echo_env() -> dict[str, str]:
    # Echo mode of the fake agent: no MOCK_* variable at all.
    return {name: value for name, value in os.environ.items() if not name.startswith("MOCK_")}


def _request() -> SubagentRequest:
    return SubagentRequest(label="bench", prompt=[{"type": "text", "text": PROMPT}], signal=CancelController().signal)


def bare_floor_run(cwd: str) -> float:
    """The stdlib floor: the same exchange with blocking pipes and no host machinery."""
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, str(FAKE_ACP_AGENT)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=cwd,
        env=_echo_env(),
        start_new_session=True,
    )
    assert child.stdin is not None and child.stdout is not None

    def call(request_id: int, method: str, params: dict[str, object]) -> dict[str, object]:
        assert child.stdin is not None and child.stdout is not None
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        child.stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        child.stdin.flush()
        while True:
            reply = json.loads(child.stdout.readline())
            if reply.get("id") == request_id and "method" not in reply:
                return reply

    call(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    session = call(1, "session/new", {"cwd": cwd, "mcpServers": []})["result"]
    assert isinstance(session, dict)
    prompt = [{"type": "text", "text": PROMPT}]
    call(2, "session/prompt", {"sessionId": session["sessionId"], "prompt": prompt})
    child.stdin.close()
    child.wait()
    child.stdout.close()
    return time.perf_counter() - started


async def host_run(cwd: str) -> float:
    """One provider run of the echo agent, from spawn to a completed dispose."""
    spec = AcpRunSpec(command=sys.executable, args=(str(FAKE_ACP_AGENT),), cwd=cwd, env={})
    started = time.perf_counter()
    stop_reason = ""
    async with anyio.create_task_group() as group:
        run = await start_acp_run(_request(), spec, task_group=group)
        stop_reason = (await run.result()).stop_reason
        await run.dispose()
    assert stop_reason == "completed", stop_reason
    return time.perf_counter() - started


async def stream_through_provider(cwd: str) -> float:
    """Seconds from the start of the run until 100 000 chunks were folded and the result settled."""
    spec = AcpRunSpec(command=sys.executable, args=(str(STREAM_AGENT), str(CHUNKS)), cwd=cwd, env={})
    elapsed = 0.0
    output: list[dict[str, object]] = []
    async with anyio.create_task_group() as group:
        run = await start_acp_run(_request(), spec, task_group=group)
        started = time.perf_counter()
        output = (await run.result()).output
        elapsed = time.perf_counter() - started
        await run.dispose()
    assert output == [{"type": "text", "text": "x" * CHUNKS}], "chunks were lost"
    return elapsed


def raw_decode(blob: bytes) -> float:
    """Seconds for a bare ``json.loads`` loop over the same lines."""
    started = time.perf_counter()
    texts: list[str] = []
    for line in blob.splitlines():
        message = json.loads(line)
        texts.append(message["params"]["update"]["content"]["text"])
    assert len(texts) == CHUNKS
    return time.perf_counter() - started


async def main() -> None:
    """Run both benchmarks and print their ratios."""
    with tempfile.TemporaryDirectory() as cwd:
        # Warm-up: imports, first interpreter start.
        bare_floor_run(cwd)
        await host_run(cwd)
        bare: list[float] = []
        hosted: list[float] = []
        for _ in range(RUNS):
            bare.append(bare_floor_run(cwd))
            hosted.append(await host_run(cwd))
        bare_median, host_median = statistics.median(bare), statistics.median(hosted)
        overhead = host_median / bare_median
        print(f"run overhead: bare median {bare_median * 1000:.1f} ms, host median {host_median * 1000:.1f} ms")
        print(f"run overhead ratio: {overhead:.3f}x (target <= 1.15x) over {RUNS} runs")

        blob = stream_lines("bench", CHUNKS)
        provider_runs: list[float] = []
        raw_runs: list[float] = []
        # Interleaved, so a load swing on a shared machine hits both sides alike; medians, not best cases.
        for _ in range(STREAM_RUNS):
            provider_runs.append(await stream_through_provider(cwd))
            raw_runs.append(raw_decode(blob))
        provider_rate = CHUNKS / statistics.median(provider_runs)
        raw_rate = CHUNKS / statistics.median(raw_runs)
        print(f"streaming: provider {provider_rate:,.0f} chunks/s, raw json.loads {raw_rate:,.0f} lines/s")
        print(
            f"streaming ratio: {provider_rate / raw_rate:.3f}x of the raw rate (target >= 0.4x), "
            f"medians of {STREAM_RUNS} interleaved runs"
        )


if __name__ == "__main__":
    anyio.run(main)
