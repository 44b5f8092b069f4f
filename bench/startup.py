"""CLI cold start (run as ``python bench/startup.py``; prints results, asserts nothing).

Whole processes, interleaved, median wall time and mean CPU (user + system of the process and its children):

* ``subagent-host --version`` next to ``python -c pass``: target <= 3x;
* ``subagent-host run --json hello`` (built-in echo) next to a stdlib spawn-and-handshake script doing the same
  ACP exchange with the same child (``bench/_stdlib_echo_client.py``): target <= 3x;
* the same exchange on the stack the host is built on (``bench/_stack_echo_client.py``): anyio alone, then anyio
  plus one pydantic model. ``run --json hello`` is also printed against the latter, the least any host on that
  stack can cost, so what is the stack's and what is the host's own stays apart.

Every process gets a private ``PYTHONPYCACHEPREFIX`` (and no ``PYTHONDONTWRITEBYTECODE``), written by the warm-up
run, so modules load from bytecode as in an installed package; ``BENCH_BYTECODE=0`` keeps the caller's setting (with
``PYTHONDONTWRITEBYTECODE=1`` every project module is then compiled from source on every start).
``BENCH_BASE=<checkout>`` adds the two ``subagent-host`` commands run from another checkout of the repository
(``PYTHONPATH=<checkout>``, e.g. ``git archive main | tar -x -C /tmp/base``), interleaved with the rest: a before
and after under the same load.
"""

from __future__ import annotations

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


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(argv: list[str], cwd: str, env: dict[str, str]) -> tuple[float, float]:
    """One whole-process run: wall seconds and CPU seconds (the process and everything it waited for)."""
    cpu_before = _children_cpu()
    started = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started, _children_cpu() - cpu_before


def main() -> None:
    walls: dict[str, list[float]] = {name: [] for name in COMMANDS}
    cpus: dict[str, list[float]] = {name: [] for name in COMMANDS}
    with tempfile.TemporaryDirectory() as cwd:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MOCK_", "FAKE_", "SUBAGENT_HOST_"))}
        env["XDG_CONFIG_HOME"] = cwd  # no user config: the built-in echo
        env["XDG_STATE_HOME"] = cwd  # run records in a private state directory, not the user's
        if BYTECODE:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = os.path.join(cwd, "pycache")
        envs = {name: dict(env, PYTHONPATH=BASE) if BASE and name.startswith("base:") else env for name in COMMANDS}
        for name, argv in COMMANDS.items():
            measure(argv, cwd, envs[name])  # warm the page cache (and write the bytecode)
        for _ in range(RUNS):
            for name, argv in COMMANDS.items():
                wall, cpu = measure(argv, cwd, envs[name])
                walls[name].append(wall)
                cpus[name].append(cpu)
    median = {name: statistics.median(values) for name, values in walls.items()}
    cpu = {name: statistics.fmean(values) for name, values in cpus.items()}
    bytecode = "cached bytecode" if BYTECODE else "the caller's bytecode setting"
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"CLI cold start, {RUNS} interleaved runs each, {bytecode}, load average {load}")
    print("(median wall (min-max), mean CPU of the process and its children):")
    for name in COMMANDS:
        low, high = min(walls[name]) * 1000, max(walls[name]) * 1000
        print(f"  {name:<36} {median[name] * 1000:7.1f} ms wall ({low:.1f}-{high:.1f})  {cpu[name] * 1000:7.1f} ms CPU")
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


if __name__ == "__main__":
    main()
