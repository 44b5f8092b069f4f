"""Runs one delegation through a ``Host`` over the config at ``argv[1]`` and prints the result and RSS as JSON.

Prints ``{"before_kib", "peak_kib", "stop_reason", "diagnostic", "output_bytes"}``: the peak RSS of this process
(``ru_maxrss``) right before the run and after it settled and its child was disposed.
"""

from __future__ import annotations

import json
import os
import resource
import sys

import anyio

from host import CancelController, Host


async def main(config_path: str) -> None:
    async with Host.open(config_path, parent_cwd=os.getcwd()) as host:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        result = await host.execute("delegate_flood", {"task": "flood"}, signal=CancelController().signal)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    value = result.to_json()
    sys.stdout.write(json.dumps({"before_kib": before, "peak_kib": peak, "result": value}) + "\n")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
