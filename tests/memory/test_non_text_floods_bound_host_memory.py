"""Floods of reasoning and of tool-call updates count against ``max_output_bytes`` like answer text
(docs/behaviour.md#stream-output-bound): with no ``timeout_ms``, a few hundred MiB of them end the run ``error`` /
``output-limit`` and grow the host's own peak RSS by under 64 MiB, for both providers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.memory._helpers import ACP_LIMIT, CHILDREN, GROWTH_BOUND_KIB, SDK_LIMIT, run_probe

pytestmark = pytest.mark.anyio

_FLOOD_MIB = "256"
# The transcript holds the kept stream twice (its chunk records and the attempt's `stream`), never the flood.
_TRANSCRIPT_BOUND = 2 * 8 * 1024 * 1024 + 64 * 1024


@pytest.mark.parametrize(
    ("kind", "child", "flood_kind", "limit_line"),
    [
        ("acp", "acp_flood_agent.py", "thought", ACP_LIMIT),
        ("acp", "acp_flood_agent.py", "tool", ACP_LIMIT),
        ("dsh-sdk", "sdk_flood_runtime.py", "reasoning", SDK_LIMIT),
        ("dsh-sdk", "sdk_flood_runtime.py", "tool", SDK_LIMIT),
    ],
)
async def test_a_flood_of_non_text_updates_ends_output_limit_with_bounded_host_rss(
    tmp_path: Path, kind: str, child: str, flood_kind: str, limit_line: str
) -> None:
    env = {"FLOOD_KIND": flood_kind, "FLOOD_MIB": _FLOOD_MIB}
    report = await run_probe(tmp_path, kind=kind, child=CHILDREN / child, env=env, record=True)
    assert limit_line in report.text
    assert report.growth_kib < GROWTH_BOUND_KIB, f"host peak RSS grew {report.growth_kib} KiB"
    assert report.transcript_bytes < _TRANSCRIPT_BOUND
