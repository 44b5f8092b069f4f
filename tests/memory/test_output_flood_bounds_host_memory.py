"""A child flooding ~1 GiB of answer text with no ``timeout_ms`` grows the host's own peak RSS by under 64 MiB: the
run ends ``error`` / ``output-limit`` at ``max_output_bytes`` (8 MiB by default) and the child is torn down."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.memory._helpers import ACP_LIMIT, CHILDREN, GROWTH_BOUND_KIB, run_probe

pytestmark = pytest.mark.anyio


async def test_a_1_gib_flood_grows_host_rss_by_under_64_mib_and_ends_output_limit(tmp_path: Path) -> None:
    report = await run_probe(tmp_path, kind="acp", child=CHILDREN / "acp_flood_agent.py", env={})
    assert ACP_LIMIT + "\n" in report.text
    assert report.growth_kib < GROWTH_BOUND_KIB, f"host peak RSS grew {report.growth_kib} KiB"
