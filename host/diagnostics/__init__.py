"""The result seam: ``SubagentResult``, the 4096-byte bound, the fixed failure lines, and the foreground and background
presentations of a run.

Model-visible text built here comes only from closed facts; raw errors reach only the logger, the error sink and
``__cause__``.
"""

from __future__ import annotations

from host.diagnostics._foreground import foreground_failure_message, text_of
from host.diagnostics._handle import SettleableRun
from host.diagnostics._jobs import JOB_KILL_REASON, JobOutcome, settle_job_start, status_line
from host.diagnostics._lines import (
    AcpCategory,
    AcpFailureFacts,
    AcpStage,
    AcpStopReasonFact,
    AcpToolKind,
    PermissionDecision,
    PermissionPolicy,
    SdkCategory,
    SdkStage,
    acp_diagnostic,
    acp_failure_line,
    acp_run_failure,
    acp_tool_kind,
    sdk_failure_line,
    sdk_run_failure,
)
from host.diagnostics._result import SubagentResult, limit_diagnostic

__all__ = [
    "AcpCategory",
    "AcpFailureFacts",
    "AcpStage",
    "AcpStopReasonFact",
    "AcpToolKind",
    "JOB_KILL_REASON",
    "JobOutcome",
    "PermissionDecision",
    "PermissionPolicy",
    "SdkCategory",
    "SdkStage",
    "SettleableRun",
    "SubagentResult",
    "acp_diagnostic",
    "acp_failure_line",
    "acp_run_failure",
    "acp_tool_kind",
    "foreground_failure_message",
    "limit_diagnostic",
    "sdk_failure_line",
    "sdk_run_failure",
    "settle_job_start",
    "status_line",
    "text_of",
]
