"""Benchmark: one DSH SDK run through the host vs a bare stdlib floor driving the same fake runtime.

Both sides do the same work per iteration: spawn the runtime, ``initialize``, ``session/prompt``, read to the root
``idle``, ``shutdown`` and reap. Prints the median wall times with the client CPU per run (``getrusage``, children
excluded) and their ratios (target ≤ 1.10x wall); asserts nothing. Run: ``python bench/sdk_run.py [iterations]``.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import anyio

from host.cancel import CancelController
from host.run._contracts import SubagentRequest
from host.sdk_provider._run import start_sdk_run
from host.sdk_provider.client import SdkRunSpec

RUNTIME = Path(__file__).resolve().parent.parent / "fake_runtimes" / "dsh_runtime.py"
ENV = {"FAKE_TEXT": "benchmark answer"}
# The floor's child sees what the host's child sees: the ambient environment plus ENV. (A bare ENV would start a
# different interpreter: no PYTHONUNBUFFERED, LANG or PATH.)
FLOOR_ENV = {**os.environ, **ENV}


def cpu_s() -> float:
    """This process's CPU seconds (all threads; children excluded)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _send(process: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert process.stdin is not None
    process.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
    process.stdin.flush()


def _read_until(process: subprocess.Popen[bytes], done: Callable[[dict[str, Any]], bool]) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        frame: dict[str, Any] = json.loads(line)
        if done(frame):
            return


def _response_to(request_id: int) -> Callable[[dict[str, Any]], bool]:
    return lambda frame: frame.get("id") == request_id


def bare_run(cwd: str) -> float:
    """The floor: blocking stdlib pipes, no validation, no teardown ladder."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, str(RUNTIME)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        cwd=cwd,
        env=FLOOR_ENV,
        start_new_session=True,
    )
    _send(process, {"id": 0, "method": "initialize", "params": {"cwd": cwd, "provider": "p", "model": "m"}})
    _read_until(process, _response_to(0))
    _send(process, {"id": 1, "method": "session/prompt", "params": {"sessionId": "s", "contentBlocks": []}})
    seen = {"idle": False, "response": False}

    def done(frame: dict[str, Any]) -> bool:
        params = frame.get("params")
        if isinstance(params, dict) and cast(dict[str, Any], params).get("status") == "idle":
            seen["idle"] = True
        if frame.get("id") == 1:
            seen["response"] = True
        return seen["idle"] and seen["response"]

    _read_until(process, done)
    _send(process, {"id": 2, "method": "shutdown", "params": {}})
    _read_until(process, _response_to(2))
    assert process.stdin is not None and process.stdout is not None
    process.stdin.close()
    process.wait()
    process.stdout.close()
    return time.perf_counter() - started


async def host_run(cwd: str) -> float:
    """The host: spawn + initialize + receipt-gated run + shutdown + ladder."""
    started = time.perf_counter()
    spec = SdkRunSpec(command=sys.executable, args=(str(RUNTIME),), cwd=cwd, env=ENV, provider="p", model="m")
    request = SubagentRequest(label="bench", prompt=[{"type": "text", "text": "go"}], signal=CancelController().signal)
    async with anyio.create_task_group() as group:
        run = await start_sdk_run(request, spec, task_group=group)
        result = await run.result()
        await run.dispose()
        assert result.stop_reason == "completed"
    return time.perf_counter() - started


async def main(iterations: int) -> None:
    with tempfile.TemporaryDirectory() as cwd:
        bare_run(cwd)  # warm the interpreter and page cache
        await host_run(cwd)
        bare: list[float] = []
        host: list[float] = []
        bare_cpu: list[float] = []
        host_cpu: list[float] = []
        for _ in range(iterations):  # interleaved, so drift affects both sides alike
            cpu = cpu_s()
            bare.append(bare_run(cwd))
            bare_cpu.append(cpu_s() - cpu)
            cpu = cpu_s()
            host.append(await host_run(cwd))
            host_cpu.append(cpu_s() - cpu)
    bare_median, host_median = statistics.median(bare), statistics.median(host)
    bare_cpu_median, host_cpu_median = statistics.median(bare_cpu), statistics.median(host_cpu)
    print(f"iterations: {iterations}")
    print(f"bare stdlib floor median: {bare_median * 1000:.1f} ms wall, {bare_cpu_median * 1000:.2f} ms client CPU")
    print(f"host run median:          {host_median * 1000:.1f} ms wall, {host_cpu_median * 1000:.2f} ms client CPU")
    print(
        f"ratio (host / floor):     {host_median / bare_median:.3f}x wall (target <= 1.10x), "
        f"{host_cpu_median / bare_cpu_median:.2f}x CPU"
    )


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]) if len(sys.argv) > 1 else 20)
