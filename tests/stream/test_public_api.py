"""``host.stream`` exports exactly its contract."""

from __future__ import annotations

import host.stream


def test_stream_exports_exactly_the_stream_and_transcript_contract() -> None:
    assert host.stream.__all__ == [
        "AcpChunkMapper",
        "BlockAssembler",
        "BlockEnd",
        "BlockStart",
        "ChunkFrame",
        "EventFrame",
        "FrameObserver",
        "ProviderKind",
        "ReasoningDelta",
        "RunJournal",
        "SdkChunkMapper",
        "StreamChunk",
        "StreamFrame",
        "TextDelta",
        "ToolCallChunk",
        "TranscriptEvent",
        "TranscriptEventType",
        "stream_chunk_adapter",
    ]
    public = {name for name in vars(host.stream) if not name.startswith("_") and name != "annotations"}
    assert public == set(host.stream.__all__)
