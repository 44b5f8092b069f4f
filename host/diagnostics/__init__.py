"""The result seam: ``SubagentResult``, the 4096-byte bound, the fixed failure lines, and the foreground and background
presentations of a run.

Model-visible text built here comes only from closed facts; raw errors reach only the logger, the error sink and
``__cause__``.
"""

from __future__ import annotations

from host.diagnostics._foreground import foreground_failure_message, text_of
from host.diagnostics._handle import CancelFlag, SettleableRun
from host.diagnostics._jobs import (
    JOB_KILL_REASON,
    JobOutcome,
    JobStatus,
    job_outcome_of,
    job_report_text,
    settle_job_run,
    settle_job_start,
    status_line,
)
from host.diagnostics._lines import (
    ACP_RUN_FAILURE_PREFIX,
    SDK_RUN_FAILURE_PREFIX,
    AcpCategory,
    AcpFailureFacts,
    AcpStage,
    AcpStopReasonFact,
    AcpToolKind,
    PermissionDecision,
    PermissionOutcome,
    PermissionPolicy,
    SdkCategory,
    SdkStage,
    acp_diagnostic,
    acp_failure_line,
    acp_run_failure,
    acp_tool_kind,
    permission_line,
    sdk_failure_line,
    sdk_run_failure,
)
from host.diagnostics._result import (
    DIAGNOSTIC_LIMIT_BYTES,
    DIAGNOSTIC_TRUNCATED_SUFFIX,
    SubagentResult,
    limit_diagnostic,
)

__all__ = [
    "ACP_RUN_FAILURE_PREFIX",
    "AcpCategory",
    "AcpFailureFacts",
    "AcpStage",
    "AcpStopReasonFact",
    "AcpToolKind",
    "CancelFlag",
    "DIAGNOSTIC_LIMIT_BYTES",
    "DIAGNOSTIC_TRUNCATED_SUFFIX",
    "JOB_KILL_REASON",
    "JobOutcome",
    "JobStatus",
    "PermissionDecision",
    "PermissionOutcome",
    "PermissionPolicy",
    "SDK_RUN_FAILURE_PREFIX",
    "SdkCategory",
    "SdkStage",
    "SettleableRun",
    "SubagentResult",
    "acp_diagnostic",
    "acp_failure_line",
    "acp_run_failure",
    "acp_tool_kind",
    "foreground_failure_message",
    "job_outcome_of",
    "job_report_text",
    "limit_diagnostic",
    "permission_line",
    "sdk_failure_line",
    "sdk_run_failure",
    "settle_job_run",
    "settle_job_start",
    "status_line",
    "text_of",
]
