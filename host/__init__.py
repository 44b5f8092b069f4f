"""subagent-host: hand a subtask to an out-of-process ACP or DSH SDK child agent and get back a trustworthy result.

Re-exports only. ``Host.open`` loads the config, starts one provider per entry and exposes the delegation and job
tools through a tool registry; every call is cancelled through a caller-owned ``CancelSignal``.
"""

from __future__ import annotations

from host._exceptions import (
    AcpRunFailure,
    AggregateError,
    CodedError,
    ConfigError,
    SdkRunFailure,
    StartAbortedError,
    SubagentHostError,
    SubagentRunError,
    UnsupportedCapabilityError,
)
from host._host import Host
from host.cancel import CancelController, CancelSignal
from host.config import AcpEntryConfig, EntryConfig, HostConfig, SdkEntryConfig, delegation_tool_name, load_config
from host.diagnostics import JobOutcome, SubagentResult, foreground_failure_message, text_of
from host.process import adopt_orphans, reap_orphans
from host.records import resolve_state_dir
from host.stream import (
    BlockEnd,
    BlockStart,
    ChunkFrame,
    EventFrame,
    ReasoningDelta,
    StreamChunk,
    StreamFrame,
    TextDelta,
    ToolCallChunk,
)
from host.tools import (
    TOOL_ABORTED,
    TOOL_ABORTED_BEFORE_DISPATCH,
    TOOL_TIMEOUT,
    RunHooks,
    ToolFailure,
    ToolResult,
    ToolSuccess,
)

__all__ = [
    "TOOL_ABORTED",
    "TOOL_ABORTED_BEFORE_DISPATCH",
    "TOOL_TIMEOUT",
    "AcpEntryConfig",
    "AcpRunFailure",
    "AggregateError",
    "BlockEnd",
    "BlockStart",
    "CancelController",
    "CancelSignal",
    "ChunkFrame",
    "CodedError",
    "ConfigError",
    "EntryConfig",
    "EventFrame",
    "Host",
    "HostConfig",
    "JobOutcome",
    "ReasoningDelta",
    "RunHooks",
    "SdkEntryConfig",
    "SdkRunFailure",
    "StartAbortedError",
    "StreamChunk",
    "StreamFrame",
    "SubagentHostError",
    "SubagentResult",
    "SubagentRunError",
    "TextDelta",
    "ToolCallChunk",
    "ToolFailure",
    "ToolResult",
    "ToolSuccess",
    "UnsupportedCapabilityError",
    "adopt_orphans",
    "delegation_tool_name",
    "foreground_failure_message",
    "load_config",
    "reap_orphans",
    "resolve_state_dir",
    "text_of",
]
