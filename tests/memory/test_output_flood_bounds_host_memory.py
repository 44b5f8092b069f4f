"""A child flooding ~1 GiB of answer text with no ``timeout_ms`` grows the host's own peak RSS by under 64 MiB: the
run ends ``error`` / ``output-limit`` at ``max_output_bytes`` (8 MiB by default) and the child is torn down."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from tests.conftest import PYTHON

pytestmark = pytest.mark.anyio

_CHILDREN = Path(__file__).parent / "children"
_GROWTH_BOUND_KIB = 64 * 1024


async def test_a_1_gib_flood_grows_host_rss_by_under_64_mib_and_ends_output_limit(tmp_path: Path) -> None:
    config = tmp_path / "subagent-host.toml"
    agent = json.dumps(str(_CHILDREN / "acp_flood_agent.py"))
    config.write_text(
        f'[providers.flood]\nkind = "acp"\ncommand = {json.dumps(PYTHON)}\nargs = [{agent}]\n', encoding="utf-8"
    )
    with anyio.fail_after(120):
        done = await anyio.run_process(
            [sys.executable, str(_CHILDREN / "host_rss_probe.py"), str(config)],
            cwd=tmp_path,
            check=False,
            stderr=subprocess.PIPE,
        )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    report = json.loads(done.stdout)
    growth_kib = report["peak_kib"] - report["before_kib"]
    message = report["result"]["error"]["message"]
    assert "Diagnostic: Subagent failure (provider: ACP; stage: prompt; category: output-limit)\n" in message
    assert growth_kib < _GROWTH_BOUND_KIB, f"host peak RSS grew {growth_kib} KiB"
