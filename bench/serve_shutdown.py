"""``serve`` shutdown with a foreground run in flight (run as ``python bench/serve_shutdown.py``; asserts nothing).

Four cases, each on a fresh server, from the trigger to the server's exit, interleaved round by round:

* ``cooperative, SIGTERM`` (the floor): the child exits at stdin EOF, so shutdown waits for no grace;
* ``trap, SIGTERM``: the child ignores stdin EOF and SIGTERM; its entry's own TERM grace is 2500 ms, which shutdown
  caps at 1000 ms (so about EOF 100 ms + 1000 ms);
* ``deaf, SIGTERM``: the child ignores stdin EOF and exits on SIGTERM; its EOF grace is 500 ms;
* ``deaf, SIGTERM+SIGINT``: the same, with a second signal 50 ms after the first, which ends the EOF wait.

Prints the median wall time with its min-max, its ratio to the floor's, and the server's CPU per shutdown
(``getrusage`` of reaped children: the server and its fake agents, start-up included).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FAKE_ACP_AGENT = REPO / "fake_runtimes" / "acp_agent.py"
RUNS = int(os.environ.get("BENCH_RUNS", "5"))


def _config(directory: Path, *, child: str) -> Path:
    switch = {"trap": 'MOCK_TRAP_SIGTERM = "1"\n', "deaf": 'MOCK_IGNORE_EOF = "1"\n', "cooperative": ""}[child]
    eof_ms, term_ms = (100, 2500) if child == "trap" else (500, 1000)
    path = directory / "subagent-host.toml"
    path.write_text(
        f'[providers.x]\nkind = "acp"\ncommand = "{sys.executable}"\nargs = ["{FAKE_ACP_AGENT}"]\n'
        f"dispose_eof_grace_ms = {eof_ms}\ndispose_grace_ms = {term_ms}\n"
        f'[providers.x.env]\nMOCK_HANG = "1"\n{switch}MOCK_READY_FILE = "{directory / "ready"}"\n',
        encoding="utf-8",
    )
    return path


def _send(process: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()


def _one(*, child: str, second: bool) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        config = _config(directory, child=child)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        process = subprocess.Popen(
            [sys.executable, "-m", "host", "serve", "--config", str(config), "--no-record"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=REPO,
        )
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
        _send(process, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        assert process.stdout is not None
        process.stdout.readline()
        _send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        call = {"name": "delegate_x", "arguments": {"task": "x"}}
        _send(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
        ready = directory / "ready"
        while not (ready.exists() and ready.read_text() == "ready"):
            time.sleep(0.01)
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        if second:
            time.sleep(0.05)
            process.send_signal(signal.SIGINT)
        process.wait()
        elapsed = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        assert process.returncode == 0, process.returncode
        return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


_CASES = (
    ("cooperative, SIGTERM", "cooperative", False),
    ("trap, SIGTERM", "trap", False),
    ("deaf, SIGTERM", "deaf", False),
    ("deaf, SIGTERM+SIGINT", "deaf", True),
)


def main() -> None:
    print(f"load average: {os.getloadavg()}; {RUNS} runs per case, interleaved")
    walls: dict[str, list[float]] = {label: [] for label, _, _ in _CASES}
    cpus: dict[str, list[float]] = {label: [] for label, _, _ in _CASES}
    for _ in range(RUNS):
        for label, child, second in _CASES:
            wall, cpu = _one(child=child, second=second)
            walls[label].append(wall)
            cpus[label].append(cpu)
    floor = statistics.median(walls[_CASES[0][0]])
    for label, _, _ in _CASES:
        median = statistics.median(walls[label])
        print(
            f"{label:22} wall median {median * 1000:6.0f} ms "
            f"(min {min(walls[label]) * 1000:.0f}, max {max(walls[label]) * 1000:.0f}), "
            f"{median / floor:5.2f}x the floor; "
            f"CPU per server run median {statistics.median(cpus[label]) * 1000:.0f} ms"
        )
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
