"""A DSH SDK runtime flooding ~1 GiB into the run's session before the prompt's receipt, with no ``timeout_ms``,
grows the host's own peak RSS by under 64 MiB: the client's pre-receipt queue passes its bound (4 x
``max_output_bytes``, 32 MiB by default), the run ends ``error`` / ``output-limit`` and the runtime is torn down
(docs/behaviour.md#sdk-client-subscription)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FAKE_DSH_RUNTIME
from tests.memory._helpers import GROWTH_BOUND_KIB, SDK_LIMIT, run_probe

pytestmark = pytest.mark.anyio


async def test_a_1_gib_pre_receipt_flood_grows_host_rss_by_under_64_mib_and_ends_output_limit(tmp_path: Path) -> None:
    report = await run_probe(
        tmp_path, kind="dsh-sdk", child=FAKE_DSH_RUNTIME, env={"FAKE_PRE_RECEIPT_FLOOD_MIB": "1024"}, record=True
    )
    assert SDK_LIMIT in report.text
    assert report.growth_kib < GROWTH_BOUND_KIB, f"host peak RSS grew {report.growth_kib} KiB"
    assert report.transcript_bytes < 64 * 1024  # nothing of the flood reached the transcript
