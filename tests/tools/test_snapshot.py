"""Lossless JSON snapshots (docs/behaviour.md#registry-lossless-json)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from pydantic import BaseModel

from host.tools._snapshot import NOT_LOSSLESS, snapshot_json


def test_snapshot_copies_json_values_and_turns_tuples_into_lists() -> None:
    value: dict[str, Any] = {"a": [1, 2.5, True, None, "s"], "b": {"c": (1, 2)}}
    copied = snapshot_json(value)
    assert copied == {"a": [1, 2.5, True, None, "s"], "b": {"c": [1, 2]}}


def test_snapshot_is_detached_from_the_original() -> None:
    inner = [1]
    value = {"inner": inner}
    copied = snapshot_json(value)
    inner.append(2)
    value["new"] = []
    assert copied == {"inner": [1]}


def test_shared_acyclic_references_are_copied() -> None:
    shared = {"x": 1}
    assert snapshot_json([shared, shared]) == [{"x": 1}, {"x": 1}]


class _Model(BaseModel):
    x: int = 1


@dataclasses.dataclass
class _Data:
    x: int = 1


@pytest.mark.parametrize(
    "value",
    [
        math.nan,
        math.inf,
        -math.inf,
        -0.0,
        {1, 2},
        b"bytes",
        Decimal("1.5"),
        _Model(),
        _Data(),
        object(),
        {1: "non-str key"},
        [math.nan],
        {"deep": {"deeper": [-0.0]}},
    ],
)
def test_values_json_cannot_carry_exactly_are_not_lossless(value: object) -> None:
    assert snapshot_json(value) is NOT_LOSSLESS


def test_cycles_are_not_lossless() -> None:
    cyclic: list[object] = []
    cyclic.append(cyclic)
    assert snapshot_json(cyclic) is NOT_LOSSLESS
    looped: dict[str, object] = {}
    looped["self"] = {"again": looped}
    assert snapshot_json(looped) is NOT_LOSSLESS


def test_positive_zero_and_ordinary_floats_are_lossless() -> None:
    assert snapshot_json([0.0, 1e300, -2.5]) == [0.0, 1e300, -2.5]


class _ExplodingList(list[int]):
    def __iter__(self) -> Iterator[int]:
        raise RuntimeError("iteration exploded")


def test_an_exception_from_a_custom_iterator_propagates() -> None:
    with pytest.raises(RuntimeError, match="iteration exploded"):
        snapshot_json({"x": _ExplodingList([1])})
