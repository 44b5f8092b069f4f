"""The tool registry: caller-owned cancellation, stage-based mutability, one result per call.

``ToolRegistry.execute`` runs the pipeline of docs/behaviour.md#registry-pipeline and always returns exactly one
``ToolResult``; ``_define.define_tool`` builds definitions from pydantic models; ``install_timeout_policy`` lives in
``host.tools._timeout_policy``. ``create_delegation_tool`` builds ``delegate_<name>``; ``JobRunner`` and
``create_job_tools`` run one-shot background jobs and expose them as ``job_output`` / ``job_list`` / ``job_kill``.
"""

from __future__ import annotations

from host.tools._changes_tool import (
    CHANGES_APPLY_TOOL_NAME,
    ChangesApplyValue,
    apply_text,
    apply_value,
    create_changes_apply_tool,
)
from host.tools._delegation import ParentCwdOf, RunHooks, create_delegation_tool
from host.tools._job_tools import JOB_LIST_TOOL_NAME, JOB_OUTPUT_TOOL_NAME, create_job_tools
from host.tools._jobs import JobDoneListener, JobRunner
from host.tools._registry import ToolRegistry
from host.tools._results import TOOL_ABORTED, TOOL_ABORTED_BEFORE_DISPATCH, TOOL_TIMEOUT
from host.tools._session_tools import SESSION_CLOSE_TOOL_NAME, SESSION_LIST_TOOL_NAME, create_session_tools
from host.tools._slots import RunSlots
from host.tools._timeout_policy import install_timeout_policy
from host.tools._types import ToolExecutionInput, ToolFailure, ToolResult, ToolRunContext, ToolSuccess

__all__ = [
    "CHANGES_APPLY_TOOL_NAME",
    "SESSION_CLOSE_TOOL_NAME",
    "SESSION_LIST_TOOL_NAME",
    "create_session_tools",
    "JOB_LIST_TOOL_NAME",
    "JOB_OUTPUT_TOOL_NAME",
    "TOOL_ABORTED",
    "TOOL_ABORTED_BEFORE_DISPATCH",
    "TOOL_TIMEOUT",
    "ChangesApplyValue",
    "JobDoneListener",
    "JobRunner",
    "ParentCwdOf",
    "RunHooks",
    "RunSlots",
    "ToolExecutionInput",
    "ToolFailure",
    "ToolRegistry",
    "ToolResult",
    "ToolRunContext",
    "ToolSuccess",
    "apply_text",
    "apply_value",
    "create_changes_apply_tool",
    "create_delegation_tool",
    "create_job_tools",
    "install_timeout_policy",
]
