"""``serve`` overhead (run as ``python bench/serve.py``; prints results, asserts nothing).

``delegate_echo`` through ``subagent-host serve`` and the official MCP client (one server, one session, sequential
calls) against a direct ``Host.execute`` in this process, interleaved A B per round. Prints the median wall time
of each with its min-max, the client process's CPU per call (``getrusage``, ours only: the server's CPU is not
counted), and the ratio of medians; the target is <= 1.2x.
"""

from __future__ import annotations

import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from host import CancelController, Host  # noqa: E402
from host.config._loader import parse_config  # noqa: E402

FAKE_ACP_AGENT = REPO / "fake_runtimes" / "acp_agent.py"
RUNS = int(os.environ.get("BENCH_RUNS", "20"))
TASK = "echo me"


def _config_text() -> str:
    return (
        f'[providers.echo]\nkind = "acp"\ncommand = "{sys.executable}"\nargs = ["{FAKE_ACP_AGENT}"]\n'
        "dispose_eof_grace_ms = 300\ndispose_grace_ms = 300\n"
    )


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _summary(name: str, walls: list[float], cpus: list[float]) -> str:
    return (
        f"{name:>8}: median {statistics.median(walls) * 1000:7.1f} ms "
        f"(min {min(walls) * 1000:.1f} - max {max(walls) * 1000:.1f}), "
        f"client CPU {statistics.median(cpus) * 1000:.1f} ms/call"
    )


async def main() -> None:
    env = {name: value for name, value in os.environ.items() if not name.startswith("MOCK_")}
    env["PYTHONPATH"] = str(REPO)
    with tempfile.TemporaryDirectory() as workdir:
        config_path = Path(workdir) / "subagent-host.toml"
        config_path.write_text(_config_text(), encoding="utf-8")
        config = parse_config(
            {
                "providers": {
                    "echo": {
                        "kind": "acp",
                        "command": sys.executable,
                        "args": [str(FAKE_ACP_AGENT)],
                        "dispose_eof_grace_ms": 300,
                        "dispose_grace_ms": 300,
                    }
                }
            }
        )
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "host", "serve", "--config", str(config_path)], env=env, cwd=workdir
        )
        direct_walls: list[float] = []
        direct_cpus: list[float] = []
        served_walls: list[float] = []
        served_cpus: list[float] = []
        async with Host.open(config, parent_cwd=workdir) as host, stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                # Warm both paths once (imports, first spawn) before measuring.
                await host.execute("delegate_echo", {"task": TASK}, signal=CancelController().signal)
                await session.call_tool("delegate_echo", {"task": TASK})
                for _ in range(RUNS):
                    cpu, started = _cpu_s(), time.perf_counter()
                    await host.execute("delegate_echo", {"task": TASK}, signal=CancelController().signal)
                    direct_walls.append(time.perf_counter() - started)
                    direct_cpus.append(_cpu_s() - cpu)
                    cpu, started = _cpu_s(), time.perf_counter()
                    await session.call_tool("delegate_echo", {"task": TASK})
                    served_walls.append(time.perf_counter() - started)
                    served_cpus.append(_cpu_s() - cpu)
    print(f"delegate_echo, {RUNS} interleaved rounds, load average {os.getloadavg()[0]:.1f}")
    print(_summary("direct", direct_walls, direct_cpus))
    print(_summary("serve", served_walls, served_cpus))
    ratio = statistics.median(served_walls) / statistics.median(direct_walls)
    print(f"   ratio: {ratio:.2f}x (target <= 1.2x)")


if __name__ == "__main__":
    anyio.run(main)
