"""200 chaotic runs through one ``Host``, 32 at a time, on asyncio and on trio: every invariant holds for each.

The seed is printed; ``CHAOS_SEED=<seed> pytest tests/chaos`` replays the same draws.
"""

from __future__ import annotations

import os
import random
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chaos._batch import run_batch
from tests.chaos._draws import draw

pytestmark = pytest.mark.anyio

RUNS = 200
CONCURRENCY = 32


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> Iterator[str]:
    yield request.param


@pytest.fixture
def seed() -> int:
    chosen = int(os.environ.get("CHAOS_SEED") or secrets.randbits(32))
    print(f"CHAOS_SEED={chosen}")  # noqa: T201 - the seed replays the batch
    return chosen


@pytest.mark.timeout(240)
async def test_every_chaotic_run_settles_once_cleanly_and_leaves_nothing(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    canary = f"CANARY{secrets.token_hex(6)}"
    draws = [draw(rng, canary) for _ in range(RUNS)]
    problems = await run_batch(tmp_path, draws, canary=canary, concurrency=CONCURRENCY)
    assert not problems, f"CHAOS_SEED={seed}\n" + "\n".join(problems[:40])
