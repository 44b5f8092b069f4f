"""subagent-host: hand a subtask to an out-of-process ACP or DSH SDK child agent and get back a trustworthy result."""

from __future__ import annotations

from host._exceptions import (
    AggregateError,
    CodedError,
    ConfigError,
    StartAbortedError,
    SubagentHostError,
)

__all__ = [
    "AggregateError",
    "CodedError",
    "ConfigError",
    "StartAbortedError",
    "SubagentHostError",
]
