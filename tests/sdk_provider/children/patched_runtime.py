"""The fake DSH runtime with test-only patches beyond docs/behaviour.md#sdk-fake-runtime, selected by ``PATCH_*``
variables.

* ``PATCH_HUGE_TEXT_BYTES=<n>``: the default assistant text becomes ``n`` bytes of ``x`` (env values cannot carry
  megabytes, so the fake's own ``FAKE_TEXT`` cannot).
* ``PATCH_STDERR_FLOOD_BYTES=<n>``: write ``n`` bytes of secret-bearing stderr lines before booting.
* ``PATCH_FOREIGN_SESSIONS=1``: before every root notification, emit a copy for a foreign session with a different
  text, so foreign events (including a foreign ``idle``) interleave with the root's.
* ``PATCH_UNINDEXED_DELTAS=1``: every ``text-delta`` chunk goes out without its ``index`` (valid for the client; the
  stream maps no chunk from it, the output still folds its text).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

import fake_runtimes.dsh_runtime as dsh_runtime

_FOREIGN = "session-foreign"


def _foreign_copy(params: Mapping[str, object]) -> dict[str, object]:
    copy = dict(params)
    copy["sessionId"] = _FOREIGN
    event = params.get("event")
    if isinstance(event, dict):
        text = json.dumps(event).replace("hello from fake runtime", "foreign text")
        copy["event"] = json.loads(text)
    return copy


def main() -> None:
    huge = os.environ.get("PATCH_HUGE_TEXT_BYTES")
    if huge:
        dsh_runtime.__dict__["DEFAULT_TEXT"] = "x" * int(huge)
    flood = os.environ.get("PATCH_STDERR_FLOOD_BYTES")
    if flood:
        line = ("SECRET_TOKEN /private/path stderr flood " * 30)[:1023] + "\n"
        for _ in range(int(flood) // len(line)):
            sys.stderr.write(line)
        sys.stderr.flush()
    if os.environ.get("PATCH_FOREIGN_SESSIONS"):
        runtime_class = dsh_runtime._FakeRuntime
        original = runtime_class._notify

        def notify(self: dsh_runtime._FakeRuntime, method: str, params: Mapping[str, object]) -> None:
            if params.get("sessionId") not in (None, _FOREIGN):
                original(self, method, _foreign_copy(params))
            original(self, method, params)

        member = "_notify"
        setattr(runtime_class, member, notify)
    if os.environ.get("PATCH_UNINDEXED_DELTAS"):

        def chunk(self: dsh_runtime._FakeRuntime, sid: str, text: str) -> None:
            self._event(sid, "assistant/chunk", {"turn": 0, "step": 0, "chunk": {"type": "text-delta", "text": text}})

        setattr(dsh_runtime._FakeRuntime, "_chunk", chunk)  # noqa: B010
    dsh_runtime.main()


if __name__ == "__main__":
    main()
