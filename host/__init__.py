"""subagent-host: hand a subtask to an out-of-process ACP or DSH SDK child agent and get back a trustworthy result.

Re-exports only. ``Host.open`` loads the config, starts one provider per entry and exposes the delegation and job
tools through a tool registry; every call is cancelled through a caller-owned ``CancelSignal``. ``open_batch``
runs a batch of delegations (a list or a JSONL file of ``BatchItem``) on an ``Executor`` and yields the results.
"""

from __future__ import annotations

import typing as _typing

from host._exceptions import (
    AcpRunFailure,
    AggregateError,
    BatchInputError,
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
    RunUsage,
    StreamChunk,
    StreamFrame,
    TextDelta,
    ToolCallChunk,
    UsageCost,
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

if _typing.TYPE_CHECKING:
    from host.batch import BatchItem, BatchResult, BatchRun, Executor, LocalExecutor, RayExecutor, open_batch

_BATCH_NAMES = frozenset(
    {"BatchItem", "BatchResult", "BatchRun", "Executor", "LocalExecutor", "RayExecutor", "open_batch"}
)


def __getattr__(name: str) -> object:
    """The batch names, imported on first use: a command that runs no batch never pays for ``host.batch``."""
    if name not in _BATCH_NAMES:
        raise AttributeError(f"module 'host' has no attribute {name!r}")
    import host.batch

    value = getattr(host.batch, name)
    globals()[name] = value
    return value


__all__ = [
    "TOOL_ABORTED",
    "TOOL_ABORTED_BEFORE_DISPATCH",
    "TOOL_TIMEOUT",
    "AcpEntryConfig",
    "AcpRunFailure",
    "AggregateError",
    "BatchInputError",
    "BatchItem",
    "BatchResult",
    "BatchRun",
    "BlockEnd",
    "BlockStart",
    "CancelController",
    "CancelSignal",
    "ChunkFrame",
    "CodedError",
    "ConfigError",
    "EntryConfig",
    "EventFrame",
    "Executor",
    "Host",
    "HostConfig",
    "JobOutcome",
    "LocalExecutor",
    "RayExecutor",
    "ReasoningDelta",
    "RunHooks",
    "RunUsage",
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
    "UsageCost",
    "adopt_orphans",
    "delegation_tool_name",
    "foreground_failure_message",
    "load_config",
    "open_batch",
    "reap_orphans",
    "resolve_state_dir",
    "text_of",
]
