"""Updates a run does not keep cost nothing (docs/behaviour.md#stream-output-bound): a few hundred MiB of ACP
``plan`` updates, or of DSH SDK reasoning-delta chunks and unknown events, reach no stream, transcript, live frame
or record, so the run completes and the host's own peak RSS grows by under 64 MiB."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.memory._helpers import CHILDREN, GROWTH_BOUND_KIB, run_probe

pytestmark = pytest.mark.anyio

_FLOOD = {"FLOOD_MIB": "256"}


async def test_an_acp_flood_of_dropped_updates_is_not_kept(tmp_path: Path) -> None:
    env = {"FLOOD_KIND": "plan", **_FLOOD}
    report = await run_probe(tmp_path, kind="acp", child=CHILDREN / "acp_flood_agent.py", env=env, record=True)
    assert report.text == "flood over"
    assert report.growth_kib < GROWTH_BOUND_KIB, f"host peak RSS grew {report.growth_kib} KiB"
    # run/start, the chunk, the message, run/end: nothing of the flood.
    assert report.frames == 4
    assert report.transcript_bytes < 4096


async def test_a_dsh_sdk_flood_of_dropped_events_is_not_kept(tmp_path: Path) -> None:
    env = {"FLOOD_KIND": "dropped", **_FLOOD}
    report = await run_probe(tmp_path, kind="dsh-sdk", child=CHILDREN / "sdk_flood_runtime.py", env=env, record=True)
    assert report.text == "flood over"
    assert report.growth_kib < GROWTH_BOUND_KIB, f"host peak RSS grew {report.growth_kib} KiB"
    assert report.frames == 4
    assert report.transcript_bytes < 4096
