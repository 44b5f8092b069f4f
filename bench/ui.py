"""The dashboard with 10 000 runs (run as ``python bench/ui.py``; prints results, asserts nothing).

A state directory of ``BENCH_UI_RUNS`` (10 000) transcripts is generated from one real recorded run (the same
records with fresh ids and times, so every file has the real shape). ``subagent-host ui`` serves it; the bench
times, interleaved per round:

- the runs page (``/``) and its JSON endpoint (``/api/runs``): the first answer (the index is built from the
  records) and then warm answers;
- the floor: the same server answering its static stylesheet (HTTP, the security envelope, no state read), and the
  directory listing the index refreshes from (``scandir`` + ``stat`` of every transcript, in this process);
- the live stream: a writer appends a record to a running transcript (holding its lock, as the host's writer
  does); the time until the event arrives on ``/api/runs/<id>/events``.

Targets: a warm answer under 200 ms; the stream at most 250 ms behind a write. Medians with min-max; the
server's CPU (psutil) and this process's (``getrusage``).
"""

from __future__ import annotations

import fcntl
import http.client
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parent.parent
RUNS = int(os.environ.get("BENCH_UI_RUNS", "10000"))
ROUNDS = int(os.environ.get("BENCH_RUNS", "15"))
STREAM_WRITES = int(os.environ.get("BENCH_STREAM_WRITES", "20"))
CONSOLE = str(Path(sys.executable).parent / "subagent-host")


def _template(state: Path) -> list[dict[str, object]]:
    env = {**os.environ, "SUBAGENT_HOST_STATE_DIR": str(state)}
    subprocess.run([CONSOLE, "run", "--json", "a benchmark task"], env=env, capture_output=True, check=True)
    (transcript,) = (state / "runs").glob("*.jsonl")
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    for path in (state / "runs").iterdir():
        path.unlink()
    return records


def _generate(state: Path, template: list[dict[str, object]]) -> None:
    runs = state / "runs"
    runs.mkdir(parents=True, exist_ok=True, mode=0o700)
    for i in range(RUNS):
        run_id = str(uuid.uuid4())
        stamp = f"2026-11-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:{(i * 7) % 60:02d}.{i % 1000:03d}Z"
        lines: list[str] = []
        for record in template:
            copy = dict(record)
            copy["time"] = stamp
            data = copy.get("data")
            if isinstance(data, dict) and "run_id" in data:
                copy["data"] = {**data, "run_id": run_id}
            if copy.get("type") == "prompt":
                copy["data"] = {"content": [{"type": "text", "text": f"benchmark task number {i}"}]}
            lines.append(json.dumps(copy) + "\n")
        (runs / f"{run_id}.jsonl").write_text("".join(lines))


def _get(port: int, path: str) -> tuple[float, int]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    start = time.perf_counter()
    connection.request("GET", path)
    response = connection.getresponse()
    body = response.read()
    elapsed = time.perf_counter() - start
    connection.close()
    assert response.status == 200, (path, response.status)
    return elapsed, len(body)


def _scandir_floor(state: Path) -> float:
    start = time.perf_counter()
    with os.scandir(state / "runs") as listing:
        for entry in listing:
            entry.stat()
    return time.perf_counter() - start


def _stream_lag(port: int, state: Path) -> list[float]:
    run_id = str(uuid.uuid4())
    path = state / "runs" / f"{run_id}.jsonl"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(
        fd, (json.dumps({"seq": 0, "type": "run/start", "time": "2026-12-01T00:00:00Z", "data": {}}) + "\n").encode()
    )
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request("GET", f"/api/runs/{run_id}/events")
    response = connection.getresponse()
    lags: list[float] = []
    try:
        response.readline()  # the run/start event
        response.readline()
        for seq in range(1, STREAM_WRITES + 1):
            time.sleep(0.05 + (seq % 5) * 0.037)  # writes land at varied phases of the poll
            record = {"seq": seq, "type": "chunk", "time": "t", "data": {"type": "text-delta", "index": 0, "text": "x"}}
            written = time.perf_counter()
            os.write(fd, (json.dumps(record) + "\n").encode())
            line = response.readline()
            lags.append(time.perf_counter() - written)
            assert line.startswith(b"data:"), line
            response.readline()
    finally:
        os.close(fd)
        connection.close()
    return lags


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:7.1f} ms ({min(values) * 1000:.1f}-{max(values) * 1000:.1f})"


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        state = Path(scratch) / "state"
        _generate(state, _template(Path(scratch) / "template"))
        env = {**os.environ, "SUBAGENT_HOST_STATE_DIR": str(state)}
        server = subprocess.Popen(
            [CONSOLE, "ui", "--http", "127.0.0.1:0"], env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL
        )
        try:
            assert server.stderr is not None
            found = re.search(rb"127\.0\.0\.1:(\d+)/", server.stderr.readline())
            assert found is not None
            port = int(found.group(1))
            process = psutil.Process(server.pid)
            cpu_before = sum(process.cpu_times()[:2])
            first_page, size = _get(port, "/")
            first_json, _ = _get(port, "/api/runs")
            print(
                f"{RUNS} runs; first answer (index built from the records): page {first_page * 1000:.0f} ms "
                f"({size} bytes), JSON {first_json * 1000:.0f} ms"
            )
            page: list[float] = []
            api: list[float] = []
            static: list[float] = []
            listing: list[float] = []
            filtered: list[float] = []
            for _ in range(ROUNDS):
                static.append(_get(port, "/static/app.css")[0])
                page.append(_get(port, "/")[0])
                api.append(_get(port, "/api/runs")[0])
                filtered.append(_get(port, "/api/runs?q=number+99&status=completed")[0])
                listing.append(_scandir_floor(state))
            floor = statistics.median(static)
            print(f"warm, {ROUNDS} rounds interleaved (median, min-max; x the static-asset floor):")
            print(f"  static asset (floor)     {_ms(static)}")
            print(f"  scandir+stat (index floor){_ms(listing)}")
            for name, values in (("runs page", page), ("/api/runs", api), ("/api/runs filtered", filtered)):
                print(f"  {name:<24} {_ms(values)}  {statistics.median(values) / floor:5.1f}x  (target < 200 ms)")
            lags = _stream_lag(port, state)
            print(
                f"live stream lag over {len(lags)} writes: {_ms(lags)}; max {max(lags) * 1000:.0f} ms (target <= 250)"
            )
            cpu = sum(process.cpu_times()[:2]) - cpu_before
            own = resource.getrusage(resource.RUSAGE_SELF)
            print(f"server CPU {cpu:.2f} s in all; bench process CPU {own.ru_utime + own.ru_stime:.2f} s")
        finally:
            server.terminate()
            server.wait(timeout=30)
            if server.stderr is not None:
                server.stderr.close()


if __name__ == "__main__":
    main()
