"""Host configuration: TOML loading, the lookup order, the built-in ``echo`` default, per-kind entry validation.

``load_config`` returns a frozen ``HostConfig`` whose entries are fully validated (env expanded, cwd absolute) or
raises ``ConfigError`` with the spec's exact message; nothing here spawns or reads a child.
"""

from __future__ import annotations

from host.config._env_refs import expand_env_references
from host.config._loader import (
    BUILTIN_DESCRIPTION,
    BUILTIN_SOURCE,
    CONFIG_ENV_VAR,
    DEFAULT_CONFIG_FILENAME,
    builtin_config,
    load_config,
    parse_config,
)
from host.config._models import (
    DISPOSE_EOF_GRACE_MS,
    DISPOSE_GRACE_MS,
    INITIALIZE_TIMEOUT_MS,
    SDK_MODEL,
    SDK_PROVIDER,
    SHUTDOWN_TIMEOUT_MS,
    AcpEntryConfig,
    EntryConfig,
    HostConfig,
    SdkEntryConfig,
    delegation_tool_name,
)
from host.config._rules import is_accessible_directory

__all__ = [
    "BUILTIN_DESCRIPTION",
    "BUILTIN_SOURCE",
    "CONFIG_ENV_VAR",
    "DEFAULT_CONFIG_FILENAME",
    "DISPOSE_EOF_GRACE_MS",
    "DISPOSE_GRACE_MS",
    "INITIALIZE_TIMEOUT_MS",
    "SDK_MODEL",
    "SDK_PROVIDER",
    "SHUTDOWN_TIMEOUT_MS",
    "AcpEntryConfig",
    "EntryConfig",
    "HostConfig",
    "SdkEntryConfig",
    "builtin_config",
    "delegation_tool_name",
    "expand_env_references",
    "is_accessible_directory",
    "load_config",
    "parse_config",
]
