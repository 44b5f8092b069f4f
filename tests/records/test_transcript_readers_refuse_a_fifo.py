"""A FIFO put where a transcript is expected (after the listing that found a regular file there) is refused at
once by both transcript readers, ``read_records`` (``runs show``) and ``TranscriptTail`` (``runs follow``, the
dashboard's live stream), with an ``OSError`` their callers already handle: it used to block ``open()``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from host.records import TranscriptTail
from host.records._store import read_records
from tests._state_file_helpers import fifo_at

PROMPT_S = 5.0
"""How long refusing may take (a FIFO's blocked reader is released only after ``RELEASE_S``)."""
RELEASE_S = 10.0


def test_read_records_and_the_tail_refuse_a_fifo_at_once(tmp_path: Path) -> None:
    with fifo_at(tmp_path / "runs" / "run.jsonl", release_after_s=RELEASE_S) as path:
        started = time.monotonic()
        with pytest.raises(OSError, match="not a regular file"):
            read_records(path)
        with pytest.raises(OSError, match="not a regular file"):
            TranscriptTail(path)
        elapsed = time.monotonic() - started
    assert elapsed < PROMPT_S
