"""``host.diagnostics`` exports exactly its contract, and ``host._run`` exactly the run contracts."""

from __future__ import annotations

from types import ModuleType

import host._run
import host.diagnostics


def public_names(module: ModuleType) -> set[str]:
    return {name for name in vars(module) if not name.startswith("_") and name != "annotations"}


def test_diagnostics_exports_exactly_the_result_seam() -> None:
    assert host.diagnostics.__all__ == [
        "ACP_RUN_FAILURE_PREFIX",
        "AcpCategory",
        "AcpFailureFacts",
        "AcpStage",
        "AcpStopReasonFact",
        "AcpToolKind",
        "CancelFlag",
        "DIAGNOSTIC_LIMIT_BYTES",
        "DIAGNOSTIC_TRUNCATED_SUFFIX",
        "DISPOSE_ON_CANCEL_TIMEOUT_S",
        "ErrorSink",
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
        "call_error_sink",
        "foreground_failure_message",
        "job_outcome_of",
        "job_report_text",
        "limit_diagnostic",
        "normalize_result",
        "permission_line",
        "sdk_failure_line",
        "sdk_run_failure",
        "settle_foreground_run",
        "settle_job_run",
        "settle_job_start",
        "settle_run_result",
        "status_line",
        "text_of",
    ]
    assert public_names(host.diagnostics) == set(host.diagnostics.__all__)


def test_run_module_exports_exactly_the_run_contracts() -> None:
    assert host._run.__all__ == [
        "AgentOptions",
        "Capabilities",
        "MAX_TOKENS_LIMIT",
        "Provider",
        "SubagentRequest",
        "SubagentRun",
        "check_capabilities",
    ]
