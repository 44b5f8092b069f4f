"""The unvalidated hot-path delta builders must stay indistinguishable from validated chunks.

They set pydantic's instance slots directly; these tests catch a pydantic upgrade that changes that layout.
"""

from __future__ import annotations

import copy
import pickle

import pytest

from host.stream import ChunkFrame, ReasoningDelta, TextDelta, stream_chunk_adapter
from host.stream._chunks import construct_trusted, reasoning_delta, text_delta


@pytest.mark.parametrize(
    ("fast", "validated"),
    [
        (text_delta(3, "hé"), TextDelta(index=3, text="hé")),
        (reasoning_delta(0, "plan"), ReasoningDelta(index=0, text="plan")),
    ],
)
def test_trusted_deltas_equal_validated_ones_in_every_observable_way(
    fast: TextDelta | ReasoningDelta, validated: TextDelta | ReasoningDelta
) -> None:
    assert fast == validated
    assert hash(fast) == hash(validated)
    assert repr(fast) == repr(validated)
    assert fast.model_dump() == validated.model_dump()
    assert fast.model_dump_json() == validated.model_dump_json()
    assert fast.model_fields_set == validated.model_fields_set
    assert stream_chunk_adapter.validate_json(fast.model_dump_json()) == validated
    assert pickle.loads(pickle.dumps(fast)) == validated
    assert copy.deepcopy(fast) == validated


def test_trusted_deltas_stay_frozen() -> None:
    delta = text_delta(0, "x")
    with pytest.raises(ValueError):
        delta.__setattr__("text", "y")


def test_a_trusted_chunk_frame_equals_a_validated_one_in_every_observable_way() -> None:
    chunk = TextDelta(index=1, text="x")
    fast = construct_trusted(
        ChunkFrame, {"type": "chunk", "run_id": "run-1", "chunk": chunk}, frozenset({"run_id", "chunk"})
    )
    validated = ChunkFrame(run_id="run-1", chunk=chunk)
    assert fast == validated
    assert repr(fast) == repr(validated)
    assert fast.model_dump() == validated.model_dump()
    assert fast.model_dump_json() == validated.model_dump_json()
    assert fast.model_fields_set == validated.model_fields_set
    assert pickle.loads(pickle.dumps(fast)) == validated
    assert copy.deepcopy(fast) == validated
