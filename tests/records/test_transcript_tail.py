"""``TranscriptTail`` on a real file appended while it reads: whole records only, in order, with bounded memory.

A line half written is held back until its newline; a line longer than the bound is skipped without being
buffered; a line that is not a JSON object is skipped; ``writer_alive`` is the writer's lock.
"""

from __future__ import annotations

import json
from pathlib import Path

from host.records import TranscriptTail, encode_line
from host.records._paths import ensure_runs_dir
from host.records._writer import TranscriptWriter


def _line(seq: int, text: str = "") -> str:
    return encode_line({"seq": seq, "type": "chunk", "data": {"text": text}})


def test_a_half_written_record_is_held_back_until_its_newline(tmp_path: Path) -> None:
    writer = TranscriptWriter.create(ensure_runs_dir(tmp_path), "r")
    tail = TranscriptTail(tmp_path / "runs" / "r.jsonl")
    try:
        assert tail.read_records() == [] and tail.writer_alive()
        first, second = _line(0, "a"), _line(1, "b")
        writer.write(first + second[:7])
        assert [record["seq"] for record in tail.read_records()] == [0]
        assert tail.mid_line
        writer.write(second[7:])
        assert [record["seq"] for record in tail.read_records()] == [1]
        assert not tail.mid_line
    finally:
        writer.close()
        tail.close()
    assert not tail.writer_alive()


def test_an_over_long_or_unparsable_line_is_skipped_and_reading_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    long_line = _line(1, "x" * 5000)
    path.write_text(_line(0) + long_line[:3000], encoding="utf-8")
    tail = TranscriptTail(path, max_record_bytes=1024)
    try:
        assert [record["seq"] for record in tail.read_records()] == [0]
        assert tail.mid_line and len(tail._partial) == 0  # past the bound nothing is buffered
        with path.open("a", encoding="utf-8") as file:
            file.write(long_line[3000:] + "not json\n" + json.dumps([1]) + "\n" + _line(2))
        assert [record["seq"] for record in tail.read_records()] == [2]
        assert tail.skipped_bytes == len(long_line) - 1 + len("not json") + len("[1]")
    finally:
        tail.close()
