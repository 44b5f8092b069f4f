"""Retention after each recorded run counts the runs directory only when the limit could have been passed.

A host remembers the count of its last look and the transcripts it created since: while those cannot pass
``keep_runs`` (and fewer than ``RECOUNT_EVERY_RUNS`` were created) no directory is listed. Its own runs are still
pruned to exactly ``keep_runs`` after each run, and runs other processes wrote are pruned at its next count
(docs/behaviour.md#records-retention).
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

import host.records._recording as recording_module
from host import CancelController, Host
from host.config import HostConfig
from host.config._loader import parse_config
from tests.records._helpers import PROCESS_TIMEOUT_S, acp_entry

pytestmark = pytest.mark.anyio


def _config(keep_runs: int) -> HostConfig:
    return parse_config({"host": {"keep_runs": keep_runs}, "providers": {"child": acp_entry()}})


def _transcripts(state: Path) -> list[Path]:
    return sorted((state / "runs").glob("*.jsonl"))


async def test_runs_below_the_limit_list_the_directory_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counts: list[int] = []
    real_count = recording_module.count_transcripts

    def counting(state_dir: Path) -> int:
        counts.append(real_count(state_dir))
        return counts[-1]

    monkeypatch.setattr(recording_module, "count_transcripts", counting)
    state = tmp_path / "state"
    with anyio.fail_after(PROCESS_TIMEOUT_S * 4):
        async with Host.open(_config(10), parent_cwd=str(tmp_path), state_dir=state) as host:
            for turn in range(4):
                result = await host.execute("delegate_child", {"task": f"run {turn}"}, signal=CancelController().signal)
                assert result.is_error is False
    assert counts == [1]
    assert len(_transcripts(state)) == 4


async def test_runs_another_process_wrote_are_pruned_at_the_next_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recording_module, "RECOUNT_EVERY_RUNS", 2)
    state = tmp_path / "state"
    with anyio.fail_after(PROCESS_TIMEOUT_S * 4):
        async with Host.open(_config(3), parent_cwd=str(tmp_path), state_dir=state) as host:
            await host.execute("delegate_child", {"task": "first"}, signal=CancelController().signal)
            for index in range(5):  # finished runs of another host, older than this host's
                start: dict[str, object] = {"type": "run/start", "time": f"2020-01-01T00:00:0{index}.000Z", "data": {}}
                (state / "runs" / f"other-{index}.jsonl").write_text(json.dumps(start) + "\n", encoding="utf-8")
            await host.execute("delegate_child", {"task": "second"}, signal=CancelController().signal)
            assert len(_transcripts(state)) == 7  # not counted yet: one transcript created since the last count
            await host.execute("delegate_child", {"task": "third"}, signal=CancelController().signal)
            transcripts = _transcripts(state)
    assert len(transcripts) == 3
    assert not [path for path in transcripts if path.name.startswith("other-")]
