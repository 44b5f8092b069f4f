"""The host vs a stdlib floor vs the official ACP Python SDK client, interleaved in one run (asserts nothing).

Run: ``python bench/vs_acp_sdk.py [--quick] [--uvloop] [--only NAME,...]``. Sides, measured in turn A B C:

* ``floor``: the stdlib floor. Spawn, ``initialize``, ``session/new``, ``session/prompt``, stdin EOF, wait, on
  blocking pipes (threads for concurrency), decoding every line with ``json.loads``;
* ``host``: ``start_acp_run`` + ``result()`` + ``dispose()`` (the whole teardown ladder);
* ``sdk``: ``acp.spawn_agent_process`` + ``ClientSideConnection`` (agent-client-protocol), the same exchange.

Agents: the project's echo agent (``fake_runtimes/acp_agent.py``) and ``bench/_minimal_agent.py``. For every side
it prints the median wall time, min–max, the client CPU per run (``getrusage(RUSAGE_SELF)``: this process and its
threads, children excluded; the number that barely moves with the machine's load) and the ratios host/floor and
host/SDK. Scenarios: one run; 100 000-chunk streaming (chunks/s, peak RSS growth); 1, 8, 32, 64 concurrent
(runs/s, p50, p99, CPU per run); idle CPU per run-second while 32 runs wait in their child; cancel → result
settled and cancel → process tree gone, for a cooperative child and for one that traps SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio  # noqa: TID251  # the official SDK client is asyncio-only
import contextlib
import dataclasses
import gc
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anyio

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import acp  # noqa: E402
from acp import schema as acp_schema  # noqa: E402
from acp.interfaces import Client  # noqa: E402

from host.acp_provider._run import AcpRunSpec, start_acp_run  # noqa: E402
from host.cancel import CancelController  # noqa: E402
from host.diagnostics import SubagentResult  # noqa: E402
from host.run._contracts import SubagentRequest  # noqa: E402
from host.stream import StreamFrame  # noqa: E402

ECHO_AGENT = REPO / "fake_runtimes" / "acp_agent.py"
MINIMAL_AGENT = REPO / "bench" / "_minimal_agent.py"
PROMPT = "echo me"
# Ladder graces of the cancel scenarios, the same on every side: stdin EOF → SIGTERM → SIGKILL.
CANCEL_GRACE_S = 0.2
STATM_PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True, slots=True)
class Agent:
    """One child to drive: a display name and its argv (after the interpreter) per mode."""

    name: str
    script: Path
    minimal: bool

    def argv(self, mode: str = "echo", count: int = 0) -> list[str]:
        if self.minimal:
            return [str(self.script), mode, *([str(count)] if count else [])]
        return [str(self.script)]

    def env(self, mode: str = "echo") -> dict[str, str]:
        # The echo agent echoes only with no MOCK_* variable at all; MOCK_HANG holds the prompt until cancelled.
        return {"MOCK_HANG": "1"} if not self.minimal and mode == "hang" else {}


AGENTS = (Agent("echo agent", ECHO_AGENT, minimal=False), Agent("minimal agent", MINIMAL_AGENT, minimal=True))


def _base_env() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if not name.startswith("MOCK_")}


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def rss_bytes() -> int:
    with open("/proc/self/statm", "rb") as statm:
        return int(statm.read().split()[1]) * STATM_PAGE


class PeakRss:
    """Samples this process's RSS every 2 ms in a thread; ``growth`` is the peak over the starting RSS."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._start = rss_bytes()
        self._peak = self._start
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.002):
            self._peak = max(self._peak, rss_bytes())

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._peak = max(self._peak, rss_bytes())

    @property
    def growth_mib(self) -> float:
        return (self._peak - self._start) / 2**20


# -- the floor: blocking pipes ---------------------------------------------------------------------------------


class FloorChild:
    """One agent driven over blocking stdlib pipes."""

    def __init__(self, agent: Agent, cwd: str, mode: str = "echo", count: int = 0) -> None:
        self.texts: list[str] = []
        self.process = subprocess.Popen(
            [sys.executable, *agent.argv(mode, count)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=cwd,
            env={**_base_env(), **agent.env(mode)},
            start_new_session=True,
        )
        self._next_id = 0

    def send(self, message: dict[str, object]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, object]) -> int:
        request_id = self._next_id
        self._next_id += 1
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id

    def read_response(self, request_id: int) -> dict[str, Any]:
        assert self.process.stdout is not None
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise EOFError("agent closed stdout")
            message: dict[str, Any] = json.loads(line)
            if message.get("method") == "session/update":
                content: dict[str, Any] = message["params"]["update"].get("content") or {}
                if content.get("type") == "text":
                    self.texts.append(content["text"])
            elif message.get("id") == request_id:
                return message

    def handshake(self, cwd: str) -> str:
        self.read_response(self.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}}))
        return self.read_response(self.request("session/new", {"cwd": cwd, "mcpServers": []}))["result"]["sessionId"]

    def close(self, *, grace_s: float = 5.0) -> None:
        """EOF, then SIGTERM and SIGKILL to the group, each after ``grace_s``."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                self.process.wait(grace_s)
                break
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, sig)
        self.process.wait()
        self.process.stdout.close()


def floor_run(agent: Agent, cwd: str, mode: str = "echo", count: int = 0) -> str:
    child = FloorChild(agent, cwd, mode, count)
    session = child.handshake(cwd)
    child.read_response(child.request("session/prompt", {"sessionId": session, "prompt": _prompt()}))
    child.close()
    return "".join(child.texts)


# -- the host ----------------------------------------------------------------------------------------------------


def _prompt() -> list[dict[str, object]]:
    return [{"type": "text", "text": PROMPT}]


def _spec(agent: Agent, cwd: str, mode: str = "echo", count: int = 0, grace_s: float | None = None) -> AcpRunSpec:
    spec = AcpRunSpec(command=sys.executable, args=tuple(agent.argv(mode, count)), cwd=cwd, env=agent.env(mode))
    if grace_s is None:
        return spec
    return dataclasses.replace(spec, dispose_eof_grace_ms=grace_s * 1000, dispose_grace_ms=grace_s * 1000)


def _ignore_frame(frame: StreamFrame) -> None:
    del frame


async def host_run(agent: Agent, cwd: str, mode: str = "echo", count: int = 0, *, hooks: bool = False) -> str:
    on_frame = _ignore_frame if hooks else None
    result = SubagentResult(stop_reason="error")
    request = SubagentRequest(label="bench", prompt=_prompt(), signal=CancelController().signal, on_frame=on_frame)
    async with anyio.create_task_group() as group:
        run = await start_acp_run(request, _spec(agent, cwd, mode, count), task_group=group)
        result = await run.result()
        await run.dispose()
    assert result.stop_reason == "completed", result
    return "".join(str(block.get("text", "")) for block in result.output)


# -- the official ACP SDK client --------------------------------------------------------------------------------


class SdkClient:
    """The least a client does: fold message text, refuse permissions."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if isinstance(update, acp_schema.AgentMessageChunk):
            content = update.content
            if isinstance(content, acp_schema.TextContentBlock):
                self.texts.append(content.text)

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        return acp_schema.RequestPermissionResponse(outcome=acp_schema.DeniedOutcome(outcome="cancelled"))


def _as_client(client: SdkClient) -> Client:
    # The SDK answers "method not found" for whatever a client leaves out; its Protocol lists every method.
    return cast(Client, client)


async def sdk_run(agent: Agent, cwd: str, mode: str = "echo", count: int = 0) -> str:
    client = SdkClient()
    async with acp.spawn_agent_process(
        _as_client(client), sys.executable, *agent.argv(mode, count), cwd=cwd, env={**_base_env(), **agent.env(mode)}
    ) as (conn, _process):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        session = await conn.new_session(cwd=cwd, mcp_servers=[])
        response = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block(PROMPT)])
        assert response.stop_reason == "end_turn", response
    return "".join(client.texts)


# -- measurement -------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class Samples:
    walls: list[float] = field(default_factory=list[float])
    cpus: list[float] = field(default_factory=list[float])
    extra: list[float] = field(default_factory=list[float])


async def measure(sides: Sequence[tuple[str, Callable[[], Awaitable[object]]]], reps: int) -> dict[str, Samples]:
    """Run each side once per repetition, interleaved; record wall and client CPU of each call."""
    samples = {name: Samples() for name, _ in sides}
    for _ in range(reps):
        for name, call in sides:
            gc.collect()
            cpu, wall = cpu_s(), time.perf_counter()
            extra = await call()
            samples[name].walls.append(time.perf_counter() - wall)
            samples[name].cpus.append(cpu_s() - cpu)
            if isinstance(extra, float):
                samples[name].extra.append(extra)
    return samples


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def ratio(host: float, other: float) -> str:
    return f"{host / other:.2f}x" if other > 0 else "n/a"


def report(title: str, samples: dict[str, Samples], *, per_run: int = 1, unit: str = "ms") -> None:
    print(f"\n### {title}")
    print("| side | median wall ms | min–max ms | client CPU/run ms |")
    print("|---|---|---|---|")
    for name, sample in samples.items():
        walls = sample.walls
        cpu = statistics.median(sample.cpus) / per_run
        print(f"| {name} | {ms(statistics.median(walls))} | {ms(min(walls))}–{ms(max(walls))} | {ms(cpu)} |")
    print_ratios(samples, lambda sample: statistics.median(sample.walls), "wall")
    print_ratios(samples, lambda sample: statistics.median(sample.cpus), "CPU")


def print_ratios(samples: dict[str, Samples], metric: Callable[[Samples], float], label: str) -> None:
    host = metric(samples["host"])
    parts = [f"host/{name} {ratio(host, metric(sample))}" for name, sample in samples.items() if name != "host"]
    print(f"{label} ratios: " + ", ".join(parts))


async def in_thread_pool(count: int, call: Callable[[], object]) -> list[float]:
    """Run ``count`` blocking calls at once on threads; return each call's latency."""
    latencies: list[float] = []

    def timed() -> None:
        started = time.perf_counter()
        call()
        latencies.append(time.perf_counter() - started)

    def run_all() -> None:
        with ThreadPoolExecutor(count) as pool:
            for future in [pool.submit(timed) for _ in range(count)]:
                future.result()

    run_all()
    return latencies


FAILURES: dict[str, int] = {}
"""Runs that raised, by scenario and side (under heavy load the SDK's own 2 s shutdown bound can expire)."""


async def concurrently(count: int, call: Callable[[], Awaitable[object]], label: str = "") -> list[float]:
    latencies: list[float] = []

    async def timed() -> None:
        started = time.perf_counter()
        try:
            await call()
        except Exception as exc:  # containment: one failed run is counted, not fatal to the whole benchmark
            FAILURES[label] = FAILURES.get(label, 0) + 1
            print(f"  ({label}: a run failed: {type(exc).__name__})")
        latencies.append(time.perf_counter() - started)

    async with anyio.create_task_group() as group:
        for _ in range(count):
            group.start_soon(timed)
    return latencies


def percentile(values: Sequence[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


async def bench_one_run(agent: Agent, cwd: str, reps: int) -> None:
    async def floor() -> None:
        assert floor_run(agent, cwd) == PROMPT

    async def host() -> None:
        assert await host_run(agent, cwd) == PROMPT

    async def sdk() -> None:
        assert await sdk_run(agent, cwd) == PROMPT

    await measure([("floor", floor), ("host", host), ("sdk", sdk)], 1)  # warm-up
    report(
        f"one run, {agent.name} ({reps} interleaved reps)",
        await measure([("floor", floor), ("host", host), ("sdk", sdk)], reps),
    )


async def bench_streaming(cwd: str, chunks: int, reps: int) -> None:
    agent = AGENTS[1]
    expected = "x" * chunks

    def rss_wrapped(call: Callable[[], Awaitable[str]]) -> Callable[[], Awaitable[float]]:
        async def wrapped() -> float:
            with PeakRss() as peak:
                assert await call() == expected
            return peak.growth_mib

        return wrapped

    async def floor() -> str:
        return floor_run(agent, cwd, "stream", chunks)

    async def host() -> str:
        return await host_run(agent, cwd, "stream", chunks)

    async def host_hooks() -> str:
        return await host_run(agent, cwd, "stream", chunks, hooks=True)

    async def sdk() -> str:
        return await sdk_run(agent, cwd, "stream", chunks)

    sides = [
        ("floor", rss_wrapped(floor)),
        ("host", rss_wrapped(host)),
        ("host+hooks", rss_wrapped(host_hooks)),
        ("sdk", rss_wrapped(sdk)),
    ]
    samples = await measure(sides, reps)
    print(f"\n### streaming {chunks:,} one-character chunks, minimal agent ({reps} interleaved reps)")
    print("| side | median chunks/s | min–max chunks/s | client CPU/run ms | peak RSS growth MiB (median) |")
    print("|---|---|---|---|---|")
    for name, sample in samples.items():
        rates = [chunks / wall for wall in sample.walls]
        print(
            f"| {name} | {statistics.median(rates):,.0f} | {min(rates):,.0f}–{max(rates):,.0f} | "
            f"{ms(statistics.median(sample.cpus))} | {statistics.median(sample.extra):.1f} |"
        )
    floor_rate = chunks / statistics.median(samples["floor"].walls)
    sdk_rate = chunks / statistics.median(samples["sdk"].walls)
    for name in ("host", "host+hooks"):
        rate = chunks / statistics.median(samples[name].walls)
        print(f"{name}: {rate / floor_rate:.2f}x of the floor's chunks/s, {rate / sdk_rate:.2f}x of the SDK's")


async def bench_concurrency(agent: Agent, cwd: str, levels: Sequence[int], reps: int) -> None:
    for level in levels:
        latencies: dict[str, list[float]] = {"floor": [], "host": [], "sdk": []}

        async def floor(level: int = level, latencies: dict[str, list[float]] = latencies) -> None:
            latencies["floor"] += await in_thread_pool(level, lambda: floor_run(agent, cwd))

        async def host(level: int = level, latencies: dict[str, list[float]] = latencies) -> None:
            latencies["host"] += await concurrently(level, lambda: host_run(agent, cwd), f"{level} concurrent, host")

        async def sdk(level: int = level, latencies: dict[str, list[float]] = latencies) -> None:
            latencies["sdk"] += await concurrently(level, lambda: sdk_run(agent, cwd), f"{level} concurrent, sdk")

        samples = await measure([("floor", floor), ("host", host), ("sdk", sdk)], reps)
        print(f"\n### {level} concurrent, {agent.name} ({reps} interleaved reps)")
        print("| side | runs/s (median) | p50 ms | p99 ms | client CPU/run ms |")
        print("|---|---|---|---|---|")
        rates: dict[str, float] = {}
        p99s: dict[str, float] = {}
        cpus: dict[str, float] = {}
        for name, sample in samples.items():
            rates[name] = level / statistics.median(sample.walls)
            p99s[name] = percentile(latencies[name], 0.99)
            cpus[name] = statistics.median(sample.cpus) / level
            p50 = percentile(latencies[name], 0.5)
            print(f"| {name} | {rates[name]:.1f} | {ms(p50)} | {ms(p99s[name])} | {ms(cpus[name])} |")
        print(
            f"host/floor: runs/s {rates['host'] / rates['floor']:.2f}x, p99 {ratio(p99s['host'], p99s['floor'])}, "
            f"CPU {ratio(cpus['host'], cpus['floor'])}; host/sdk: runs/s {rates['host'] / rates['sdk']:.2f}x, "
            f"CPU {ratio(cpus['host'], cpus['sdk'])}"
        )


async def bench_idle(agent: Agent, cwd: str, runs: int, wait_s: float) -> None:
    """CPU per run-second while ``runs`` prompts wait in their child; each side settles by cancelling."""
    results: dict[str, float] = {}

    # floor: threads blocked in readline.
    children = [FloorChild(agent, cwd, "hang") for _ in range(runs)]
    sessions = [child.handshake(cwd) for child in children]
    ids = [
        child.request("session/prompt", {"sessionId": s, "prompt": _prompt()})
        for child, s in zip(children, sessions, strict=True)
    ]
    readers = [
        threading.Thread(target=child.read_response, args=(rid,)) for child, rid in zip(children, ids, strict=True)
    ]
    for reader in readers:
        reader.start()
    await anyio.sleep(0.5)
    cpu = cpu_s()
    await anyio.sleep(wait_s)
    results["floor"] = cpu_s() - cpu
    for child, session in zip(children, sessions, strict=True):
        child.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}})
    for reader, child in zip(readers, children, strict=True):
        reader.join()
        child.close()

    # host
    controllers = [CancelController() for _ in range(runs)]
    async with anyio.create_task_group() as group:
        handles: list[Any] = []
        for controller in controllers:
            request = SubagentRequest(label="bench", prompt=_prompt(), signal=controller.signal)
            handles.append(await start_acp_run(request, _spec(agent, cwd, "hang"), task_group=group))
        await anyio.sleep(0.5)
        cpu = cpu_s()
        await anyio.sleep(wait_s)
        results["host"] = cpu_s() - cpu
        for controller in controllers:
            controller.cancel()
        for handle in handles:
            await handle.result()
            await handle.dispose()

    # sdk
    async with contextlib.AsyncExitStack() as stack:
        prompts: list[asyncio.Task[Any]] = []
        conns: list[tuple[Any, str]] = []
        for _ in range(runs):
            conn, _process = await stack.enter_async_context(
                acp.spawn_agent_process(
                    _as_client(SdkClient()),
                    sys.executable,
                    *agent.argv("hang"),
                    cwd=cwd,
                    env={**_base_env(), **agent.env("hang")},
                )
            )
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=cwd, mcp_servers=[])
            conns.append((conn, session.session_id))
            prompts.append(
                asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[acp.text_block(PROMPT)]))
            )
        await anyio.sleep(0.5)
        cpu = cpu_s()
        await anyio.sleep(wait_s)
        results["sdk"] = cpu_s() - cpu
        for conn, session_id in conns:
            await conn.cancel(session_id=session_id)
        for prompt in prompts:
            await prompt

    print(f"\n### idle: {runs} runs waiting {wait_s:.0f} s in their child, {agent.name}")
    print("| side | client CPU per run-second ms |")
    print("|---|---|")
    per = {name: cpu / (runs * wait_s) for name, cpu in results.items()}
    for name, value in per.items():
        print(f"| {name} | {value * 1000:.3f} |")
    print(f"host/floor {ratio(per['host'], per['floor'])}, host/sdk {ratio(per['host'], per['sdk'])}")


async def bench_cancel(agent: Agent, cwd: str, mode: str, reps: int) -> None:
    """Cancel a held prompt: time to a settled result, and to the whole process tree gone."""
    grace = CANCEL_GRACE_S

    async def floor() -> tuple[float, float]:
        child = FloorChild(agent, cwd, mode)
        session = child.handshake(cwd)
        prompt_id = child.request("session/prompt", {"sessionId": session, "prompt": _prompt()})
        await anyio.sleep(0.05)
        started = time.perf_counter()
        child.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}})
        if mode == "hang":
            child.read_response(prompt_id)
        settled = time.perf_counter() - started
        child.close(grace_s=grace)
        return settled, time.perf_counter() - started

    async def host() -> tuple[float, float]:
        started = settled = 0.0
        controller = CancelController()
        request = SubagentRequest(label="bench", prompt=_prompt(), signal=controller.signal)
        async with anyio.create_task_group() as group:
            run = await start_acp_run(request, _spec(agent, cwd, mode, grace_s=grace), task_group=group)
            await anyio.sleep(0.05)
            started = time.perf_counter()
            controller.cancel()
            await run.result()
            settled = time.perf_counter() - started
            await run.dispose()
        return settled, time.perf_counter() - started

    async def sdk() -> tuple[float, float]:
        started = settled = 0.0
        env = {**_base_env(), **agent.env(mode)}
        async with acp.spawn_agent_process(
            _as_client(SdkClient()),
            sys.executable,
            *agent.argv(mode),
            cwd=cwd,
            env=env,
            transport_kwargs={"shutdown_timeout": grace},
        ) as (conn, _process):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=cwd, mcp_servers=[])
            prompt = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[acp.text_block(PROMPT)]))
            await anyio.sleep(0.05)
            started = time.perf_counter()
            await conn.cancel(session_id=session.session_id)
            if mode == "hang":
                await prompt
            else:
                # The SDK has no local settle: a prompt the child never answers is dropped by the caller.
                prompt.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await prompt
            settled = time.perf_counter() - started
        return settled, time.perf_counter() - started

    samples: dict[str, Samples] = {"floor": Samples(), "host": Samples(), "sdk": Samples()}
    for _ in range(reps):
        for name, call in (("floor", floor), ("host", host), ("sdk", sdk)):
            gc.collect()
            cpu = cpu_s()
            settled, gone = await call()
            samples[name].cpus.append(cpu_s() - cpu)
            samples[name].extra.append(settled)
            samples[name].walls.append(gone)
    label = "cooperative child" if mode == "hang" else "SIGTERM-trapping child (ignores cancel and EOF too)"
    print(f"\n### cancel, {label}, {agent.name}, graces {grace * 1000:.0f} ms ({reps} interleaved reps)")
    print(
        "| side | cancel → settled ms (median, min–max) | cancel → tree gone ms (median, min–max) | client CPU/run ms |"
    )
    print("|---|---|---|---|")
    for name, sample in samples.items():
        settled, gone = sample.extra, sample.walls
        print(
            f"| {name} | {ms(statistics.median(settled))} ({ms(min(settled))}–{ms(max(settled))}) | "
            f"{ms(statistics.median(gone))} ({ms(min(gone))}–{ms(max(gone))}) | {ms(statistics.median(sample.cpus))} |"
        )
    host_gone = statistics.median(samples["host"].walls)
    print(
        f"tree gone: host/floor {ratio(host_gone, statistics.median(samples['floor'].walls))}, "
        f"host/sdk {ratio(host_gone, statistics.median(samples['sdk'].walls))}"
    )


async def main(args: argparse.Namespace) -> None:
    quick: bool = args.quick
    only = set(args.only.split(",")) if args.only else None
    print(f"# vs_acp_sdk {'--quick ' if quick else ''}{'--uvloop ' if args.uvloop else ''}".strip())
    print(f"python {sys.version.split()[0]}, acp SDK {_sdk_version()}, {os.cpu_count()} cores; load: {_load()}")
    with tempfile.TemporaryDirectory() as cwd:
        if only is None or "one" in only:
            for agent in AGENTS:
                await bench_one_run(agent, cwd, 5 if quick else 20)
        if only is None or "stream" in only:
            await bench_streaming(cwd, 100_000, 1 if quick else 3)
        if only is None or "concurrency" in only:
            for agent in AGENTS[1:] if quick else AGENTS:
                await bench_concurrency(agent, cwd, (1, 8, 32, 64), 1 if quick else 3)
        if only is None or "idle" in only:
            await bench_idle(AGENTS[1], cwd, 32, 2.0 if quick else 5.0)
        if only is None or "cancel" in only:
            for mode in ("hang", "trap"):
                await bench_cancel(AGENTS[1], cwd, mode, 2 if quick else 7)
    if FAILURES:
        print(f"\nfailed runs (counted in the wall times above): {FAILURES}")
    print(f"\nload at the end: {_load()}")


def _sdk_version() -> str:
    from importlib.metadata import version

    return version("agent-client-protocol")


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def _parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions: one pass in a few minutes")
    parser.add_argument("--uvloop", action="store_true", help="run every asyncio side on uvloop")
    parser.add_argument("--only", help="comma-separated subset of: one,stream,concurrency,idle,cancel")
    return parser.parse_args()


if __name__ == "__main__":
    arguments = _parse()
    anyio.run(main, arguments, backend="asyncio", backend_options={"use_uvloop": arguments.uvloop})
