"""Runs one delegation through a ``Host`` over the config at ``argv[1]`` and prints the result and RSS as JSON.

Prints ``{"before_kib", "peak_kib", "result", "frames", "records"}``: the peak RSS of this process (``ru_maxrss``)
right before the run and after it settled and its child was disposed, the tool result, and how many live frames and
records the run produced. With ``argv[2]`` (a state directory) the run is also recorded there, and a live frame
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
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        result = await host.execute(
            "delegate_flood",
            {"task": "flood"},
            signal=CancelController().signal,
            hooks=RunHooks(on_frame=on_frame) if observed else None,
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    value = result.to_json()
    sys.stdout.write(json.dumps({"before_kib": before, "peak_kib": peak, "result": value, **counts}) + "\n")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
