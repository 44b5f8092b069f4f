"""Test child: write garbage (``argv[1]`` picks which) to stdout or stderr first, then exec the fake ACP agent.

Modes: ``garbage`` (non-JSON, non-object, NaN and invalid UTF-8 lines on stdout), ``unknown-id`` (responses to
ids the host never used, including ``true``), ``stderr`` (10 MiB on the inherited stderr). ``argv[2]`` is the agent.
"""

from __future__ import annotations

import os
import sys

_GARBAGE = [
    b"this is not json\n",
    b"[1, 2, 3]\n",
    b'"a string"\n',
    b"42\n",
    b'{"jsonrpc": "2.0", "method": "session/update", "params": {"x": NaN}}\n',
    b"\xff\xfe\xfd not utf-8\n",
    b"\n",
    b"   \n",
    b'[{"jsonrpc": "2.0", "id": 0, "result": {}}]\n',
]
_UNKNOWN_IDS = [
    b'{"jsonrpc": "2.0", "id": 999, "result": {"stopReason": "end_turn"}}\n',
    b'{"jsonrpc": "2.0", "id": true, "result": {}}\n',
    b'{"jsonrpc": "2.0", "id": "zero", "error": {"code": -32000, "message": "nope"}}\n',
]


def main() -> None:
    mode, agent = sys.argv[1], sys.argv[2]
    if mode == "garbage":
        os.write(1, b"".join(_GARBAGE))
    elif mode == "unknown-id":
        os.write(1, b"".join(_UNKNOWN_IDS))
    elif mode == "stderr":
        block = b"e" * 65535 + b"\n"
        for _ in range(160):  # 10 MiB
            os.write(2, block)
    os.execv(sys.executable, [sys.executable, agent])


if __name__ == "__main__":
    main()
