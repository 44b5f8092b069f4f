"""The dashboard indexes each subdirectory batch's runs separately, and keeps only the few batches' indexes used last
(an LRU) besides the state directory's own, which is never dropped: browsing many batches cannot grow its memory
without bound, and a batch viewed again after its eviction is indexed afresh from its records."""

from __future__ import annotations

from pathlib import Path

from host.ui._index import RunIndexes
from tests.ui._helpers import run_task


def test_only_the_batch_indexes_used_last_are_kept_and_the_state_directory_index_stays(tmp_path: Path) -> None:
    state = tmp_path / "state"
    run_id = run_task(state / "b0", tmp_path, "a run of batch b0")["run_id"]
    indexes = RunIndexes(state, max_batches=2)
    own = indexes.of(state)
    first = indexes.of(state / "b0")
    assert [row.run_id for row in first.refresh()] == [run_id]
    assert indexes.of(state / "b0") is first  # a warm view reuses its index (incremental refresh)
    indexes.of(state / "b1")
    assert indexes.of(state / "b0") is first  # b0 was used last: b1 is the oldest now
    indexes.of(state / "b2")  # evicts b1
    indexes.of(state / "b3")  # evicts b0
    again = indexes.of(state / "b0")
    assert again is not first
    assert [row.run_id for row in again.refresh()] == [run_id]
    assert indexes.of(state) is own
    assert own.refresh() == []  # the batch's run is in its own runs/, not the state directory's
