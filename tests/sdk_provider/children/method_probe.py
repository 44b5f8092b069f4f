"""A minimal runtime that, after answering ``initialize``, sends the host a request and records the raw answer.

``PROBE_METHOD`` names the request; the answer line is written to ``PROBE_FILE``. Then it answers ``shutdown`` and
exits at stdin EOF. Stdlib only.
"""

from __future__ import annotations

import json
import os
import sys


def _write(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
    sys.stdout.flush()


def main() -> None:
    for line in sys.stdin:
        frame = json.loads(line)
        if frame.get("method") == "initialize":
            _write({"id": frame["id"], "result": {"serverInfo": {"name": "probe", "version": "1"}}})
            _write({"id": "probe-1", "method": os.environ["PROBE_METHOD"], "params": {}})
        elif frame.get("id") == "probe-1":
            staging = os.environ["PROBE_FILE"] + ".tmp"
            with open(staging, "w", encoding="utf-8") as file:
                file.write(line)
            os.replace(staging, os.environ["PROBE_FILE"])
        elif frame.get("method") == "shutdown":
            _write({"id": frame["id"], "result": {}})
            return


if __name__ == "__main__":
    main()
