"""``serve`` shutdown with a foreground run in flight (run as ``python bench/serve_shutdown.py``; asserts nothing).

Three cases, each on a fresh server, from the trigger to the server's exit:

* ``trap, SIGTERM``: the child ignores stdin EOF and SIGTERM; its entry's own TERM grace is 2500 ms, which shutdown
  caps at 1000 ms (so about EOF 100 ms + 1000 ms);
* ``deaf, SIGTERM``: the child ignores stdin EOF and exits on SIGTERM; its EOF grace is 500 ms;
* ``deaf, SIGTERM+SIGINT``: the same, with a second signal 50 ms after the first, which ends the EOF wait.

Prints the median wall time with its min-max and the server's CPU per shutdown (``getrusage`` of reaped children:
the server and its fake agents, start-up included).
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


def _config(directory: Path, *, trap: bool) -> Path:
    switch = "MOCK_TRAP_SIGTERM" if trap else "MOCK_IGNORE_EOF"
    eof_ms, term_ms = (100, 2500) if trap else (500, 1000)
    path = directory / "subagent-host.toml"
    path.write_text(
        f'[providers.x]\nkind = "acp"\ncommand = "{sys.executable}"\nargs = ["{FAKE_ACP_AGENT}"]\n'
        f"dispose_eof_grace_ms = {eof_ms}\ndispose_grace_ms = {term_ms}\n"
        f'[providers.x.env]\nMOCK_HANG = "1"\n{switch} = "1"\nMOCK_READY_FILE = "{directory / "ready"}"\n',
        encoding="utf-8",
    )
    return path


def _send(process: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()


def _one(*, trap: bool, second: bool) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        config = _config(directory, trap=trap)
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


def main() -> None:
    print(f"load average: {os.getloadavg()}; {RUNS} runs per case")
    for label, trap, second in (
        ("trap, SIGTERM", True, False),
        ("deaf, SIGTERM", False, False),
        ("deaf, SIGTERM+SIGINT", False, True),
    ):
        walls, cpus = zip(*(_one(trap=trap, second=second) for _ in range(RUNS)), strict=True)
        print(
            f"{label:22} wall median {statistics.median(walls) * 1000:6.0f} ms "
            f"(min {min(walls) * 1000:.0f}, max {max(walls) * 1000:.0f}); "
            f"CPU per server run median {statistics.median(cpus) * 1000:.0f} ms"
        )
    print(f"load average: {os.getloadavg()}")


if __name__ == "__main__":
    main()
