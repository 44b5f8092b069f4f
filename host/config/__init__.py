"""Host configuration: TOML loading, the lookup order, the built-in ``echo`` default, per-kind entry validation.

``load_config`` returns a frozen ``HostConfig`` whose entries are fully validated (env expanded, cwd absolute; an
entry needing an unset variable is set aside in ``unresolved``) or raises ``ConfigError`` with the spec's exact
message; nothing here spawns or reads a child.
"""

from __future__ import annotations

from host.config._loader import load_config
from host.config._models import (
    ACP_INITIALIZE_TIMEOUT_MS,
    DEFAULT_KEEP_RUNS,
    DEFAULT_MAX_CONCURRENT_RUNS,
    DEFAULT_MAX_FINISHED_JOB_OUTPUT_BYTES,
    DEFAULT_MAX_FINISHED_JOBS,
    DEFAULT_MAX_WARM_SESSIONS,
    DEFAULT_SESSION_TTL_DAYS,
    DISPOSE_EOF_GRACE_MS,
    DISPOSE_GRACE_MS,
    INITIALIZE_TIMEOUT_MS,
    MAX_OUTPUT_BYTES,
    SDK_MODEL,
    SDK_PROVIDER,
    SESSION_IDLE_MS,
    SHUTDOWN_TIMEOUT_MS,
    AcpEntryConfig,
    EntryConfig,
    HostConfig,
    InheritEnv,
    SdkEntryConfig,
    UnresolvedEntry,
    WorkspaceMode,
    delegation_tool_name,
)
from host.config._rules import is_accessible_directory

__all__ = [
    "ACP_INITIALIZE_TIMEOUT_MS",
    "DEFAULT_KEEP_RUNS",
    "DEFAULT_MAX_CONCURRENT_RUNS",
    "DEFAULT_MAX_FINISHED_JOBS",
    "DEFAULT_MAX_FINISHED_JOB_OUTPUT_BYTES",
    "DEFAULT_MAX_WARM_SESSIONS",
    "DEFAULT_SESSION_TTL_DAYS",
    "DISPOSE_EOF_GRACE_MS",
    "DISPOSE_GRACE_MS",
    "INITIALIZE_TIMEOUT_MS",
    "MAX_OUTPUT_BYTES",
    "SDK_MODEL",
    "SDK_PROVIDER",
    "SESSION_IDLE_MS",
    "SHUTDOWN_TIMEOUT_MS",
    "AcpEntryConfig",
    "EntryConfig",
    "HostConfig",
    "InheritEnv",
    "SdkEntryConfig",
    "UnresolvedEntry",
    "WorkspaceMode",
    "delegation_tool_name",
    "is_accessible_directory",
    "load_config",
]
