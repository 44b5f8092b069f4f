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
from host.config import HostConfig, load_config
from host.diagnostics import JobOutcome, SubagentResult
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
    "AcpRunFailure",
    "AggregateError",
    "CancelController",
    "CancelSignal",
    "CodedError",
    "ConfigError",
    "Host",
    "HostConfig",
    "JobOutcome",
    "RunHooks",
    "SdkRunFailure",
    "StartAbortedError",
    "SubagentHostError",
    "SubagentResult",
    "SubagentRunError",
    "ToolFailure",
    "ToolResult",
    "ToolSuccess",
    "UnsupportedCapabilityError",
    "load_config",
]
