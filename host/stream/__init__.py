"""The child's live stream: the normalized chunk vocabulary, the ACP and DSH SDK chunk mappers, the
``BlockAssembler``, and the per-run transcript with its totally ordered frame delivery.

Frames carry child content for the parent's live view and transcript; they are never part of a model-visible
tool result.
"""

from __future__ import annotations

from host.stream._acp import AcpChunkMapper
from host.stream._assembler import BlockAssembler
from host.stream._chunks import (
    BlockEnd,
    BlockStart,
    ReasoningDelta,
    StreamChunk,
    TextDelta,
    ToolCallChunk,
    stream_chunk_adapter,
)
from host.stream._journal import (
    ChunkFrame,
    EventFrame,
    FrameObserver,
    ProviderKind,
    RunJournal,
    StreamFrame,
    TranscriptEvent,
    usage_of_transcript,
)
from host.stream._sdk import SdkChunkMapper
from host.stream._usage import (
    RunUsage,
    UsageCost,
    acp_prompt_usage,
    acp_usage_update,
    sdk_message_usage,
)

__all__ = [
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
    "RunUsage",
    "SdkChunkMapper",
    "StreamChunk",
    "StreamFrame",
    "TextDelta",
    "ToolCallChunk",
    "TranscriptEvent",
    "UsageCost",
    "acp_prompt_usage",
    "acp_usage_update",
    "sdk_message_usage",
    "stream_chunk_adapter",
    "usage_of_transcript",
]
