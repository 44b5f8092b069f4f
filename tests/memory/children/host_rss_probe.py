"""Runs one delegation through a ``Host`` over the config at ``argv[1]`` and prints the result and RSS as JSON.

Prints ``{"before_kib", "peak_kib", "cpu_s", "result", "frames", "records"}``: this process's resident set right
before the run and its peak after the run settled and its child was disposed (``VmRSS`` and ``VmHWM`` of
``/proc/self/status``: unlike ``ru_maxrss``, which Linux carries over from the parent across fork and exec, they
count only this process's own memory; ``ru_maxrss`` off Linux), this process's CPU seconds
over the run (``getrusage``, children excluded), the tool result, and how many live frames and records the run
produced. With ``argv[2]`` (a state directory) the run is also recorded there, and a live frame
observer and a record observer are attached, so every path that could keep the run's stream is exercised.
"""

from __future__ import annotations

import json
import os
import resource
import sys
from typing import Any

import anyio

from host import CancelController, Host, RunHooks
from host.stream import StreamFrame


def memory_kib(field: str) -> int:
    """``field`` (``VmRSS`` or ``VmHWM``) of this process in KiB; ``ru_maxrss`` where ``/proc`` is missing."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


async def main(config_path: str, state_dir: str | None) -> None:
    counts = {"frames": 0, "records": 0}

    def on_frame(frame: StreamFrame) -> None:
        counts["frames"] += 1

    def on_record(run_id: str, record: dict[str, Any]) -> None:
        counts["records"] += 1

    observed = state_dir is not None
    async with Host.open(
        config_path, parent_cwd=os.getcwd(), state_dir=state_dir, on_record=on_record if observed else None
    ) as host:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        before, cpu_before = memory_kib("VmRSS"), usage.ru_utime + usage.ru_stime
        result = await host.execute(
            "delegate_flood",
            {"task": "flood"},
            signal=CancelController().signal,
            hooks=RunHooks(on_frame=on_frame) if observed else None,
        )
    usage = resource.getrusage(resource.RUSAGE_SELF)
    peak, cpu_s = memory_kib("VmHWM"), usage.ru_utime + usage.ru_stime - cpu_before
    value = result.to_json()
    report = {"before_kib": before, "peak_kib": peak, "cpu_s": round(cpu_s, 3), "result": value, **counts}
    sys.stdout.write(json.dumps(report) + "\n")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
