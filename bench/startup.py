"""CLI cold start (run as ``python bench/startup.py``; prints results, asserts nothing).

Whole processes, interleaved, median wall time and mean CPU (user + system of the process and its children):

* ``subagent-host --version`` next to ``python -c pass``: target <= 3x;
* ``subagent-host run --json hello`` (built-in echo) next to a stdlib spawn-and-handshake script doing the same
  ACP exchange with the same child (``bench/_stdlib_echo_client.py``): target <= 3x;
* the same exchange on the stack the host is built on (``bench/_stack_echo_client.py``): anyio alone, then anyio
  plus one pydantic model. ``run --json hello`` is also printed against the latter, the least any host on that
  stack can cost, so what is the stack's and what is the host's own stays apart;
* ``subagent-host serve`` (built-in echo): spawn -> the answer to a first ``server/discover`` (protocol 2026-07-28),
  and spawn -> the answer to a first ``initialize`` (2025-11-25), each next to that stack floor (target <= 1.5x) and
  to ``python -c pass``. The wall time stops at the answer's line; the server then gets stdin EOF and is waited for.
  Its CPU column is the whole process (start-up, the answer and the shutdown), and ``to answer`` is the server's own
  CPU at the moment its answer arrived (``/proc``, children excluded).

Every process gets a private ``PYTHONPYCACHEPREFIX`` (and no ``PYTHONDONTWRITEBYTECODE``), written by the warm-up
run, so modules load from bytecode as in an installed package; ``BENCH_BYTECODE=0`` keeps the caller's setting (with
``PYTHONDONTWRITEBYTECODE=1`` every project module is then compiled from source on every start).
``BENCH_BASE=<checkout>`` adds the ``subagent-host`` rows (``--version``, ``run``, ``serve``) run from another checkout
(``PYTHONPATH=<checkout>``, e.g. ``git archive main | tar -x -C /tmp/base``), interleaved with the rest: a before
and after under the same load.
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
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPT = str(Path(sys.executable).parent / "subagent-host")
RUNS = int(os.environ.get("BENCH_RUNS", "15"))
BYTECODE = os.environ.get("BENCH_BYTECODE", "1") != "0"

BASE = os.environ.get("BENCH_BASE")

COMMANDS: dict[str, list[str]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "subagent-host --version": [SCRIPT, "--version"],
    "stdlib spawn + handshake": [sys.executable, str(REPO / "bench" / "_stdlib_echo_client.py")],
    "anyio spawn + handshake": [sys.executable, str(REPO / "bench" / "_stack_echo_client.py")],
    "anyio + pydantic spawn + handshake": [sys.executable, str(REPO / "bench" / "_stack_echo_client.py"), "--pydantic"],
    "subagent-host run --json hello": [SCRIPT, "run", "--json", "hello"],
}
if BASE:
    COMMANDS["base: subagent-host --version"] = [SCRIPT, "--version"]
    COMMANDS["base: subagent-host run --json hello"] = [SCRIPT, "run", "--json", "hello"]

_CLIENT_INFO = {"name": "bench-startup", "version": "0"}
_DISCOVER_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": _CLIENT_INFO,
}
# The first message a client sends to ``serve`` (one line each), by name: the stateless era's probe, the handshake.
FIRST_MESSAGES: dict[str, dict[str, object]] = {
    "serve: spawn -> server/discover answer": {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "server/discover",
        "params": {"_meta": _DISCOVER_META},
    },
    "serve: spawn -> initialize answer": {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": _CLIENT_INFO},
    },
}
SERVE_ARGV = [SCRIPT, "serve"]
SERVE_NAMES = list(FIRST_MESSAGES) + ([f"base: {name}" for name in FIRST_MESSAGES] if BASE else [])
# How long one server may take to exit after stdin EOF.
_SERVE_EXIT_TIMEOUT_S = 60.0


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(argv: list[str], cwd: str, env: dict[str, str]) -> tuple[float, float]:
    """One whole-process run: wall seconds and CPU seconds (the process and everything it waited for)."""
    cpu_before = _children_cpu()
    started = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started, _children_cpu() - cpu_before


def _own_cpu(pid: int) -> float:
    """User + system CPU seconds of live process ``pid`` alone (``/proc/<pid>/stat``; its children excluded)."""
    with open(f"/proc/{pid}/stat", "rb") as stat:
        fields = stat.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure_first_answer(message: dict[str, object], cwd: str, env: dict[str, str]) -> tuple[float, float, float]:
    """Spawn ``serve`` and send ``message``: wall seconds to the answer, CPU of the whole process, its CPU to it."""
    cpu_before = _children_cpu()
    started = time.perf_counter()
    server = subprocess.Popen(
        SERVE_ARGV, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        server.stdin.write(json.dumps(message).encode() + b"\n")
        server.stdin.flush()
        line = server.stdout.readline()
        wall = time.perf_counter() - started
        to_answer = _own_cpu(server.pid)
        answer: dict[str, object] = json.loads(line) if line else {}
        if answer.get("id") != message["id"] or "result" not in answer:
            raise RuntimeError(f"serve did not answer {message['method']} with a result: {line[:300]!r}")
        server.stdin.close()
        server.wait(_SERVE_EXIT_TIMEOUT_S)
    finally:
        if server.poll() is None:
            server.kill()
        server.wait()
        server.stdout.close()
        server.stdin.close()
    return wall, _children_cpu() - cpu_before, to_answer


def main() -> None:
    names = [*COMMANDS, *SERVE_NAMES]
    walls: dict[str, list[float]] = {name: [] for name in names}
    cpus: dict[str, list[float]] = {name: [] for name in names}
    answer_cpus: dict[str, list[float]] = {name: [] for name in SERVE_NAMES}
    with tempfile.TemporaryDirectory() as cwd:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MOCK_", "FAKE_", "SUBAGENT_HOST_"))}
        env["XDG_CONFIG_HOME"] = cwd  # no user config: the built-in echo
        env["XDG_STATE_HOME"] = cwd  # run records in a private state directory, not the user's
        if BYTECODE:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = os.path.join(cwd, "pycache")
        envs = {name: dict(env, PYTHONPATH=BASE) if BASE and name.startswith("base:") else env for name in names}
        for name, argv in COMMANDS.items():
            measure(argv, cwd, envs[name])  # warm the page cache (and write the bytecode)
        for name in SERVE_NAMES:
            measure_first_answer(FIRST_MESSAGES[name.removeprefix("base: ")], cwd, envs[name])
        for _ in range(RUNS):
            for name, argv in COMMANDS.items():
                wall, cpu = measure(argv, cwd, envs[name])
                walls[name].append(wall)
                cpus[name].append(cpu)
            for name in SERVE_NAMES:
                message = FIRST_MESSAGES[name.removeprefix("base: ")]
                wall, cpu, to_answer = measure_first_answer(message, cwd, envs[name])
                walls[name].append(wall)
                cpus[name].append(cpu)
                answer_cpus[name].append(to_answer)
    median = {name: statistics.median(values) for name, values in walls.items()}
    cpu = {name: statistics.fmean(values) for name, values in cpus.items()}
    bytecode = "cached bytecode" if BYTECODE else "the caller's bytecode setting"
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"CLI cold start, {RUNS} interleaved runs each, {bytecode}, load average {load}")
    print("(median wall (min-max), mean CPU of the process and its children):")
    for name in names:
        low, high = min(walls[name]) * 1000, max(walls[name]) * 1000
        line = f"  {name:<44} {median[name] * 1000:7.1f} ms wall ({low:.1f}-{high:.1f})  {cpu[name] * 1000:7.1f} ms CPU"
        if name in answer_cpus:
            line += f" ({statistics.fmean(answer_cpus[name]) * 1000:.1f} to answer)"
        print(line)
    version_ratio = median["subagent-host --version"] / median["python -c pass"]
    run_ratio = median["subagent-host run --json hello"] / median["stdlib spawn + handshake"]
    print(f"  --version / python -c pass:            {version_ratio:.2f}x (target <= 3x)")
    print(f"  run --json hello / stdlib handshake:   {run_ratio:.2f}x (target <= 3x)")
    for floor in ("anyio spawn + handshake", "anyio + pydantic spawn + handshake"):
        print(f"  {floor} / stdlib handshake: {median[floor] / median['stdlib spawn + handshake']:.2f}x")
    stack_ratio = median["subagent-host run --json hello"] / median["anyio + pydantic spawn + handshake"]
    print(f"  run --json hello / anyio + pydantic handshake: {stack_ratio:.2f}x")
    if BASE:
        base_ratio = median["base: subagent-host run --json hello"] / median["stdlib spawn + handshake"]
        print(f"  base: run --json hello / stdlib handshake: {base_ratio:.2f}x")
    floor = median["anyio + pydantic spawn + handshake"]
    for name in SERVE_NAMES:
        first = name.replace("serve: spawn -> ", "")
        print(
            f"  {first} / anyio + pydantic handshake: {median[name] / floor:.2f}x (target <= 1.5x);"
            f" / python -c pass: {median[name] / median['python -c pass']:.1f}x"
        )


if __name__ == "__main__":
    main()
