"""A batch keeps no child warm after its item: each item's session is left cold (resumable), its child gone."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from host import BatchItem, LocalExecutor, load_config, open_batch
from tests.batch._helpers import acp_entry, write_config

pytestmark = pytest.mark.anyio


def _session_state_of_run(outdir: Path, run_id: str) -> str:
    """The ``state`` of the session file whose turns include ``run_id``."""
    for path in (outdir / "sessions").glob("*.json"):
        record = json.loads(path.read_text(encoding="utf-8"))
        if run_id in record["runs"]:
            return str(record["state"])
    raise AssertionError(f"no session file names run {run_id}")


async def test_each_items_session_is_cold_once_its_result_arrives(tmp_path: Path) -> None:
    # The entry keeps its default session_idle_ms (300 s): outside a batch its child would stay warm.
    config = load_config(write_config(tmp_path, {"fast": acp_entry()}))
    items = [BatchItem(id=f"t{n}", task="x") for n in range(3)]
    outdir = tmp_path / "out"
    states: dict[str, str] = {}
    with anyio.fail_after(60):
        async with open_batch(items, outdir=outdir, config=config, executor=LocalExecutor(workers=1)) as batch:
            async for result in batch:
                states[result.id] = _session_state_of_run(outdir, result.line["run_id"])
    assert states == {"t0": "cold", "t1": "cold", "t2": "cold"}
