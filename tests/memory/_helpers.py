"""Runs ``children/host_rss_probe.py`` over one ``flood`` entry and reads its report: the host's own peak RSS growth
during the run, the text the parent model sees, and (when recorded) the transcript written."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

from tests.conftest import PYTHON

CHILDREN = Path(__file__).parent / "children"
GROWTH_BOUND_KIB = 64 * 1024
"""The issue's bound: the host's peak RSS grows by under 64 MiB during a flood."""
ACP_LIMIT = "Diagnostic: Subagent failure (provider: ACP; stage: prompt; category: output-limit)"
SDK_LIMIT = "Diagnostic: Subagent failure (provider: DSH SDK; stage: session-run; category: output-limit)"


@dataclass(frozen=True, slots=True)
class ProbeReport:
    growth_kib: int
    """Peak RSS after the run minus the RSS right before it."""
    text: str
    """The tool result's text (the error message of a failure)."""
    frames: int
    records: int
    transcript_bytes: int
    """The size of the run's one recorded ``.jsonl`` (0 when not recorded)."""


async def run_probe(
    tmp_path: Path,
    *,
    kind: str,
    child: Path,
    env: Mapping[str, str],
    args: Sequence[str] = (),
    record: bool = False,
) -> ProbeReport:
    """Delegate one task to a ``flood`` entry running ``child`` with ``env``; return the probe's report."""
    config = tmp_path / "subagent-host.toml"
    table = {"kind": kind, "command": PYTHON, "args": [str(child), *args]}
    lines = ["[providers.flood]", *(f"{key} = {json.dumps(value)}" for key, value in table.items())]
    lines += ["[providers.flood.env]", *(f"{key} = {json.dumps(value)}" for key, value in env.items())]
    config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    state = tmp_path / "state"
    argv = [sys.executable, str(CHILDREN / "host_rss_probe.py"), str(config), *([str(state)] if record else [])]
    with anyio.fail_after(120):
        done = await anyio.run_process(argv, cwd=tmp_path, check=False, stderr=subprocess.PIPE)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    report = json.loads(done.stdout)
    result = report["result"]
    text = result["error"]["message"] if "error" in result else "".join(b["text"] for b in result["content"])
    transcript_bytes = 0
    if record:
        (transcript,) = (state / "runs").glob("*.jsonl")  # a recorded run writes exactly one
        transcript_bytes = transcript.stat().st_size
    return ProbeReport(
        growth_kib=report["peak_kib"] - report["before_kib"],
        text=text,
        frames=report["frames"],
        records=report["records"],
        transcript_bytes=transcript_bytes,
    )
