"""Sessions: a warm follow-up turn, a cold resume and a fresh run, each next to a floor of one ``session/prompt``
round trip to the same kind of live child (docs/behaviour.md#sessions). Target: warm turn ≤ 1.2× the floor.

Run from the repository root: ``python bench/session.py`` (``BENCH_RUNS``, default 30). Every side runs in this
process, interleaved per repetition: the **floor** writes one ``session/prompt`` line to a live fake agent
(``fake_runtimes/acp_agent.py``, started once, handshake done) on blocking pipes and reads lines until its response
(every line decoded with ``json.loads``); the **warm turn** is ``Host.execute("delegate_warm", {task, session_id})``
on a session whose child is alive; the **cold resume** is the same call on an entry with ``session_idle_ms = 0``
(spawn, ``initialize``, ``session/resume``, prompt, ``session/close``-less ladder); the **fresh run** is a call
without ``session_id`` on that entry (spawn, ``initialize``, ``session/new``, prompt, ladder); the **recorded warm
turn** is the warm turn on a second ``Host`` with a state directory, as ``serve`` runs (each turn writes its run
record and its session file). Two more sides show what an event loop costs by itself, each on a live fake agent of
its own after its handshake: the **asyncio floor** is the blocking floor's exchange done by the least an asyncio
client does (``loop.add_reader``, ``os.read``, ``os.write``, no framework), the **host connection** is the host's
own ACP connection alone (``AcpConnection``: its JSON-RPC peer, reader task and pipes, one ``session/prompt``
written and its answer awaited; no registry, session, run or record), and the **ACP SDK** is the peer a user
would pick, the official client (``agent-client-protocol``: ``spawn_agent_process`` + ``ClientSideConnection.prompt``)
on a live session. The warm turn's ratio to the ACP SDK is printed after the table. Printed: median wall
(min–max) in ms, the ratio of medians to the floor, and this process's CPU per call (``getrusage``, children
excluded).
"""

from __future__ import annotations

import asyncio  # noqa: TID251  # the asyncio floor and the official SDK client are asyncio by definition
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

import acp
import anyio
from acp.interfaces import Client

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.vs_acp_sdk import SdkClient  # noqa: E402
from host import CancelController, Host  # noqa: E402
from host.acp_provider._connection import AcpConnection  # noqa: E402
from host.acp_provider._spec import spawn_capturing_stderr  # noqa: E402
from host.config._loader import parse_config  # noqa: E402

AGENT = str(REPO / "fake_runtimes" / "acp_agent.py")
RUNS = int(os.environ.get("BENCH_RUNS", "30"))


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class _Floor:
    """A live fake agent after ``initialize`` and ``session/new``; ``turn()`` is one prompt round trip."""

    def __init__(self, env: dict[str, str]) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, AGENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={**os.environ, **env}
        )
        self._next = 0
        self._call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        self._session = self._call("session/new", {"cwd": str(REPO), "mcpServers": []})["sessionId"]

    def _call(self, method: str, params: dict[str, Any]) -> Any:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        request_id = self._next
        self._next += 1
        line = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}) + "\n"
        self._proc.stdin.write(line.encode())
        self._proc.stdin.flush()
        while True:
            message = json.loads(self._proc.stdout.readline())
            if message.get("id") == request_id and "method" not in message:
                return message.get("result")

    def turn(self, task: str) -> None:
        self._call("session/prompt", {"sessionId": self._session, "prompt": [{"type": "text", "text": task}]})

    def close(self) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        self._proc.wait(10)


class _AsyncFloor(_Floor):
    """The same exchange as ``_Floor`` done by the least an asyncio client does: the prompt line written with one
    ``os.write``, the answer read as the loop reports the pipe readable (``add_reader``), every line decoded."""

    def __init__(self, env: dict[str, str]) -> None:
        super().__init__(env)
        self._buffer = b""

    async def aturn(self, task: str) -> None:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        loop = asyncio.get_running_loop()
        request_id = self._next
        self._next += 1
        params = {"sessionId": self._session, "prompt": [{"type": "text", "text": task}]}
        line = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "session/prompt", "params": params}) + "\n"
        os.write(self._proc.stdin.fileno(), line.encode())
        fd = self._proc.stdout.fileno()
        while True:
            while b"\n" not in self._buffer:
                readable: asyncio.Future[None] = loop.create_future()
                loop.add_reader(fd, readable.set_result, None)
                try:
                    await readable
                finally:
                    loop.remove_reader(fd)
                self._buffer += os.read(fd, 65536)
            raw, _, self._buffer = self._buffer.partition(b"\n")
            message = json.loads(raw)
            if message.get("id") == request_id and "method" not in message:
                return


def _entry(state: str, **extra: Any) -> dict[str, Any]:
    env = {"MOCK_SESSION_RESUME": "1", "MOCK_SESSION_DIR": state}
    return {"kind": "acp", "command": sys.executable, "args": [AGENT], "cwd": str(REPO), "env": env, **extra}


def _report(name: str, walls: list[float], cpus: list[float], floor: float | None) -> None:
    median = statistics.median(walls) * 1000
    ratio = f"{median / floor:6.2f}x" if floor else "   1.00x"
    print(
        f"{name:<15} {median:8.2f} ms ({min(walls) * 1000:.2f}–{max(walls) * 1000:.2f})  {ratio}  "
        f"CPU {statistics.median(cpus) * 1000:.2f} ms/call"
    )


async def main() -> None:
    with tempfile.TemporaryDirectory() as state:
        config = parse_config(
            {
                "providers": {
                    "warm": _entry(state),
                    "cold": _entry(state, session_idle_ms=0, dispose_eof_grace_ms=2000),
                }
            }
        )
        agent_env = {"MOCK_SESSION_RESUME": "1", "MOCK_SESSION_DIR": state}
        floor = _Floor(agent_env)
        async_floor = _AsyncFloor(agent_env)
        names = ("floor", "asyncio floor", "host connection", "ACP SDK")
        names += ("warm turn", "recorded warm", "cold resume", "fresh run")
        sides: dict[str, tuple[list[float], list[float]]] = {name: ([], []) for name in names}
        signal = CancelController().signal
        async with contextlib.AsyncExitStack() as stack:
            # The SDK types its client as a Protocol of every method; it answers "method not found" for the rest.
            sdk, _process = await stack.enter_async_context(
                acp.spawn_agent_process(
                    cast(Client, SdkClient()), sys.executable, AGENT, cwd=str(REPO), env={**os.environ, **agent_env}
                )
            )
            await sdk.initialize(protocol_version=acp.PROTOCOL_VERSION)
            sdk_session = (await sdk.new_session(cwd=str(REPO), mcp_servers=[])).session_id
            group = await stack.enter_async_context(anyio.create_task_group())
            connection = await AcpConnection.open(
                spawn_capturing_stderr,
                [sys.executable, AGENT],
                cwd=str(REPO),
                env=agent_env,
                grace_ms=2000,
                eof_grace_ms=2000,
                task_group=group,
                on_update=lambda _update: None,
                on_permission=lambda _params: {"outcome": {"outcome": "cancelled"}},
                name="bench connection",
            )
            stack.push_async_callback(connection.aclose)
            await connection.initialize()
            connection_session = str(cast(dict[str, Any], await connection.new_session(str(REPO)))["sessionId"])
            host = await stack.enter_async_context(Host.open(config))
            recorded = await stack.enter_async_context(Host.open(config, state_dir=Path(state) / "state"))
            warm = await host.execute("delegate_warm", {"task": "open"}, signal=signal)
            recorded_warm = await recorded.execute("delegate_warm", {"task": "open"}, signal=signal)
            recorded_id = recorded_warm.to_json()["value"]["session_id"]
            cold = await host.execute("delegate_cold", {"task": "open"}, signal=signal)
            warm_id = warm.to_json()["value"]["session_id"]
            cold_id = cold.to_json()["value"]["session_id"]

            async def warm_turn() -> None:
                result = await host.execute("delegate_warm", {"task": "t", "session_id": warm_id}, signal=signal)
                assert not result.is_error

            async def recorded_turn() -> None:
                arguments = {"task": "t", "session_id": recorded_id}
                result = await recorded.execute("delegate_warm", arguments, signal=signal)
                assert not result.is_error

            async def cold_resume() -> None:
                result = await host.execute("delegate_cold", {"task": "t", "session_id": cold_id}, signal=signal)
                assert not result.is_error

            async def fresh_run() -> None:
                result = await host.execute("delegate_cold", {"task": "t"}, signal=signal)
                assert not result.is_error

            async def floor_turn() -> None:
                floor.turn("t")

            async def async_floor_turn() -> None:
                await async_floor.aturn("t")

            async def connection_turn() -> None:
                blocks = [{"type": "text", "text": "t"}]
                outstanding = await connection.send_prompt(connection_session, blocks, on_response=lambda _r: None)
                await connection.answer(outstanding)

            async def sdk_turn() -> None:
                response = await sdk.prompt(session_id=sdk_session, prompt=[acp.text_block("t")])
                assert response.stop_reason == "end_turn"

            calls = {
                "floor": floor_turn,
                "asyncio floor": async_floor_turn,
                "host connection": connection_turn,
                "ACP SDK": sdk_turn,
                "warm turn": warm_turn,
                "recorded warm": recorded_turn,
                "cold resume": cold_resume,
                "fresh run": fresh_run,
            }
            for _ in range(3):  # warm-up
                for call in calls.values():
                    await call()
            for _ in range(RUNS):
                for name, call in calls.items():
                    cpu, start = _cpu(), time.perf_counter()
                    await call()
                    sides[name][0].append(time.perf_counter() - start)
                    sides[name][1].append(_cpu() - cpu)
        floor.close()
        async_floor.close()
    print(f"sessions, {RUNS} interleaved repetitions, load {os.getloadavg()[0]:.1f}")
    floor_median = statistics.median(sides["floor"][0]) * 1000
    for name, (walls, cpus) in sides.items():
        _report(name, walls, cpus, None if name == "floor" else floor_median)
    sdk_median = statistics.median(sides["ACP SDK"][0]) * 1000
    warm_median = statistics.median(sides["warm turn"][0]) * 1000
    print(f"warm turn / ACP SDK prompt: {warm_median / sdk_median:.2f}x")


if __name__ == "__main__":
    anyio.run(main)
