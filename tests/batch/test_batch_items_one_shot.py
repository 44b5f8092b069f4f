"""A batch keeps no child warm after its item: each result line names the item's session, which is left cold
(resumable), its child gone."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from host import BatchItem, LocalExecutor, load_config, open_batch
from tests.batch._helpers import acp_entry, write_config

pytestmark = pytest.mark.anyio


async def test_each_result_names_its_session_which_is_cold_once_the_result_arrives(tmp_path: Path) -> None:
    # The entry keeps its default session_idle_ms (300 s): outside a batch its child would stay warm.
    config = load_config(write_config(tmp_path, {"fast": acp_entry()}))
    items = [BatchItem(id=f"t{n}", task="x") for n in range(3)]
    outdir = tmp_path / "out"
    sessions: dict[str, dict[str, object]] = {}
    with anyio.fail_after(60):
        async with open_batch(items, outdir=outdir, config=config, executor=LocalExecutor(workers=1)) as batch:
            async for result in batch:
                session_file = outdir / "sessions" / f"{result.line['session_id']}.json"
                sessions[result.id] = json.loads(session_file.read_text(encoding="utf-8"))
    assert sorted(sessions) == ["t0", "t1", "t2"]
    for record in sessions.values():
        assert (record["state"], record["turns"]) == ("cold", 1)
