"""Updates a run does not keep cost nothing (docs/behaviour.md#stream-output-bound): a few hundred MiB of ACP
``plan`` updates, or of DSH SDK reasoning-delta chunks and unknown events, reach no stream, transcript, live frame,
record or ``--stream-json`` line, so the run completes and the host's own peak RSS grows by under 64 MiB."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio
import pytest

from tests.cli._helpers import CONSOLE_SCRIPT, cli_env, write_config
from tests.conftest import PYTHON
from tests.memory._helpers import CHILDREN, GROWTH_BOUND_KIB, run_probe

pytestmark = pytest.mark.anyio

_FLOOD = {"FLOOD_MIB": "256"}
_DROPPED_FLOODS = pytest.mark.parametrize(
    ("kind", "child", "flood_kind"),
    [("acp", "acp_flood_agent.py", "plan"), ("dsh-sdk", "sdk_flood_runtime.py", "dropped")],
)


@_DROPPED_FLOODS
async def test_a_flood_of_dropped_updates_is_not_kept(tmp_path: Path, kind: str, child: str, flood_kind: str) -> None:
    env = {"FLOOD_KIND": flood_kind, **_FLOOD}
    report = await run_probe(tmp_path, kind=kind, child=CHILDREN / child, env=env, record=True)
    assert report.text == "flood over"
    assert report.growth_kib < GROWTH_BOUND_KIB, f"host peak RSS grew {report.growth_kib} KiB"
    # run/start, the chunk, the message, run/end (and the recorded prompt and handshake): nothing of the flood.
    assert report.frames == 4
    assert report.records == 6
    assert report.transcript_bytes < 4096


@_DROPPED_FLOODS
async def test_stream_json_carries_nothing_of_a_dropped_flood(
    tmp_path: Path, kind: str, child: str, flood_kind: str
) -> None:
    entry = {"kind": kind, "command": PYTHON, "args": [str(CHILDREN / child)]}
    write_config(tmp_path, {"flood": {**entry, "env": {"FLOOD_KIND": flood_kind, "FLOOD_MIB": "64"}}})
    argv = [CONSOLE_SCRIPT, "run", "--stream-json", "--no-record", "flood"]
    with anyio.fail_after(120):
        done = await anyio.run_process(argv, cwd=tmp_path, env=cli_env(), check=False, stderr=subprocess.PIPE)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(done.stdout) < 8192
    assert lines[-1]["stop_reason"] == "completed"
    assert lines[-1]["output"] == [{"type": "text", "text": "flood over"}]
