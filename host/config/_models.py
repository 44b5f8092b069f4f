"""Frozen, typed results of config loading: one model per entry kind, and the whole host config.

Entries hold already-validated values: ``env`` is expanded, ``cwd`` is absolute and was an accessible directory
at load time, every duration is a positive finite number of milliseconds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from host._exceptions import ConfigError

__all__ = [
    "ACP_INITIALIZE_TIMEOUT_MS",
    "DEFAULT_KEEP_RUNS",
    "MAX_OUTPUT_BYTES",
    "DEFAULT_MAX_CONCURRENT_RUNS",
    "DEFAULT_MAX_FINISHED_JOBS",
    "DEFAULT_MAX_FINISHED_JOB_OUTPUT_BYTES",
    "DISPOSE_EOF_GRACE_MS",
    "DISPOSE_GRACE_MS",
    "INITIALIZE_TIMEOUT_MS",
    "SDK_MODEL",
    "SDK_PROVIDER",
    "SESSION_IDLE_MS",
    "DEFAULT_MAX_WARM_SESSIONS",
    "DEFAULT_SESSION_TTL_DAYS",
    "SHUTDOWN_TIMEOUT_MS",
    "AcpEntryConfig",
    "EntryConfig",
    "HostConfig",
    "InheritEnv",
    "MAX_BASELINE_BYTES",
    "SETUP_TIMEOUT_MS",
    "WorkspaceMode",
    "SdkEntryConfig",
    "UnresolvedEntry",
    "delegation_tool_name",
]

MAX_OUTPUT_BYTES: Final = 8 * 1024 * 1024
"""The default ``max_output_bytes`` of an entry: 8 MiB of output text per run."""
DEFAULT_KEEP_RUNS: Final = 1000
"""How many of the newest run records retention keeps unless ``[host] keep_runs`` says otherwise."""
DEFAULT_MAX_CONCURRENT_RUNS: Final = 8
"""How many runs (foreground and background together) may be alive at once unless ``[host] max_concurrent_runs``
(or ``serve --max-concurrent-runs``) says otherwise."""
DEFAULT_MAX_FINISHED_JOBS: Final = 256
"""How many finished background jobs a host keeps unless ``[host] max_finished_jobs`` says otherwise."""
DEFAULT_MAX_FINISHED_JOB_OUTPUT_BYTES: Final = 64 * 1024 * 1024
"""How many UTF-8 bytes of finished jobs' texts a host keeps unless ``[host] max_finished_job_output_bytes`` says."""

_NOT_TOOL_NAME_CHAR = re.compile(r"[^A-Za-z0-9_]")

WorkspaceMode = Literal["shared", "worktree"]
"""Where a child works: the parent's cwd itself, or a git worktree of it of its own (docs/behaviour.md#workspaces)."""
SETUP_TIMEOUT_MS: Final = 300000.0
"""The default ``setup_timeout_ms``: the bound of a worktree entry's ``setup`` command."""
MAX_BASELINE_BYTES: Final = 1024**3
"""The default ``max_baseline_bytes``: untracked content over 1 GiB refuses a worktree."""

InheritEnv = Literal["scrubbed", "minimal"]
"""What a child inherits from the host environment: the scrubbed ambient environment, or only a short allowlist."""


DISPOSE_EOF_GRACE_MS: Final = 6000.0
"""Default teardown ladder bound on the child's exit after stdin EOF (both kinds)."""
DISPOSE_GRACE_MS: Final = 3000.0
"""Default SIGTERM→SIGKILL window and post-SIGKILL reap bound (both kinds)."""
SDK_PROVIDER: Final = "deepseek-official"
"""Default model provider a DSH SDK entry sends in ``initialize``."""
SDK_MODEL: Final = "deepseek-v4-flash"
"""Default model a DSH SDK entry sends in ``initialize``."""
SHUTDOWN_TIMEOUT_MS: Final = 1000.0
"""Default bound of the DSH SDK ``shutdown`` request."""
INITIALIZE_TIMEOUT_MS: Final = 10000.0
"""Default bound of the DSH SDK ``initialize`` request."""
ACP_INITIALIZE_TIMEOUT_MS: Final = 60000.0
"""Default ACP handshake deadline, covering ``initialize`` and ``session/new``."""
SESSION_IDLE_MS: Final = 300000.0
"""Default ``session_idle_ms``: how long a session's child stays warm after a turn (both kinds)."""
DEFAULT_MAX_WARM_SESSIONS: Final = 4
"""How many sessions may keep a warm child unless ``[host] max_warm_sessions`` says otherwise."""
DEFAULT_SESSION_TTL_DAYS: Final = 7
"""How many days an unused session stays resumable unless ``[host] session_ttl_days`` says otherwise."""


class AcpEntryConfig(BaseModel):
    """One validated ``kind = "acp"`` provider entry (docs/behaviour.md#config-acp-entry)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["acp"] = "acp"
    """The provider kind."""
    name: str
    """The entry's table key under ``[providers]``; the provider's name."""
    command: str
    """``argv[0]``; never shell-interpreted."""
    args: tuple[str, ...] = ()
    """``argv[1:]``."""
    cwd: str | None = None
    """Absolute override of the parent session cwd, validated at load; ``None`` inherits the parent's."""
    env: dict[str, str] = {}
    """Explicit child variables with ``${NAME}`` references already expanded; merged after the ambient scrub."""
    inherit_env: InheritEnv = "scrubbed"
    """``"minimal"`` passes only PATH, HOME, USER, LOGNAME, SHELL, LANG, LC_*, TERM, TMPDIR and TZ, plus ``env``."""
    permission: Literal["allow", "reject"] = "reject"
    """The unattended permission policy."""
    dispose_eof_grace_ms: float = DISPOSE_EOF_GRACE_MS
    """Teardown ladder: how long the child may take to exit after stdin EOF."""
    dispose_grace_ms: float = DISPOSE_GRACE_MS
    """Teardown ladder: the SIGTERM→SIGKILL window and the post-SIGKILL reap bound."""
    initialize_timeout_ms: float = ACP_INITIALIZE_TIMEOUT_MS
    """Handshake deadline covering ``initialize`` and ``session/new``."""
    timeout_ms: float | None = None
    """Budget of one foreground delegation through this entry; ``None`` means no budget."""
    max_output_bytes: int = MAX_OUTPUT_BYTES
    """Bounds the UTF-8 bytes of text a run keeps; past it the run ends ``error`` / ``output-limit``."""
    description: str | None = None
    """The description of this entry's delegation tool; ``None`` means a default naming kind and command."""
    workspace: WorkspaceMode = "shared"
    """``"worktree"``: every run works in a git worktree of its own (overridable per call)."""
    setup: tuple[str, ...] | None = None
    """An argv run in a new worktree before the child starts (never a shell string); ``None``: none."""
    setup_timeout_ms: float = SETUP_TIMEOUT_MS
    """The bound of ``setup``."""
    max_baseline_bytes: int = MAX_BASELINE_BYTES
    """Untracked content over this many bytes refuses a worktree."""
    session_idle_ms: float = SESSION_IDLE_MS
    """How long a session's child stays warm after a turn; ``0`` tears it down right after each turn."""


class SdkEntryConfig(BaseModel):
    """One validated ``kind = "dsh-sdk"`` provider entry (docs/behaviour.md#config-dsh-sdk-entry)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)  # built by the first such entry

    kind: Literal["dsh-sdk"] = "dsh-sdk"
    """The provider kind."""
    name: str
    """The entry's table key under ``[providers]``; the provider's name."""
    command: str
    """The runtime executable spawned per run, never via a shell."""
    args: tuple[str, ...] = ()
    """``argv[1:]``, typically the child runtime's config path."""
    cwd: str | None = None
    """Absolute override of the parent session cwd, validated at load; ``None`` inherits the parent's."""
    env: dict[str, str] = {}
    """Explicit child variables with ``${NAME}`` references already expanded; merged after the ambient scrub."""
    inherit_env: InheritEnv = "scrubbed"
    """``"minimal"`` passes only PATH, HOME, USER, LOGNAME, SHELL, LANG, LC_*, TERM, TMPDIR and TZ, plus ``env``."""
    provider: str = SDK_PROVIDER
    """The model provider sent in ``initialize``."""
    model: str = SDK_MODEL
    """The model sent in ``initialize``."""
    max_tokens: int | None = None
    """Sent in ``initialize`` only when set; an integer in 1 … 2^53−1."""
    shutdown_timeout_ms: float = SHUTDOWN_TIMEOUT_MS
    """Bound of the ``shutdown`` request."""
    dispose_eof_grace_ms: float = DISPOSE_EOF_GRACE_MS
    """Teardown ladder: how long the runtime may take to exit after stdin EOF."""
    dispose_grace_ms: float = DISPOSE_GRACE_MS
    """Teardown ladder: the SIGTERM→SIGKILL window and the post-SIGKILL reap bound."""
    initialize_timeout_ms: float = INITIALIZE_TIMEOUT_MS
    """Bound of the ``initialize`` request."""
    timeout_ms: float | None = None
    """Budget of one foreground delegation through this entry; ``None`` means no budget."""
    max_output_bytes: int = MAX_OUTPUT_BYTES
    """Bounds the UTF-8 bytes of text a run keeps; past it the run ends ``error`` / ``output-limit``."""
    description: str | None = None
    """The description of this entry's delegation tool; ``None`` means a default naming kind and command."""
    workspace: WorkspaceMode = "shared"
    """``"worktree"``: every run works in a git worktree of its own (overridable per call)."""
    setup: tuple[str, ...] | None = None
    """An argv run in a new worktree before the child starts (never a shell string); ``None``: none."""
    setup_timeout_ms: float = SETUP_TIMEOUT_MS
    """The bound of ``setup``."""
    max_baseline_bytes: int = MAX_BASELINE_BYTES
    """Untracked content over this many bytes refuses a worktree."""
    session_idle_ms: float = SESSION_IDLE_MS
    """How long a session's child stays warm after a turn; ``0`` tears it down right after each turn."""


EntryConfig = AcpEntryConfig | SdkEntryConfig
"""A validated provider entry of either kind (discriminated by ``kind``)."""


@dataclass(frozen=True, slots=True)
class UnresolvedEntry:
    """An entry that validated but references unset host variables: it fails only when it is used."""

    entry: EntryConfig
    """The entry as validated, its unset references expanded to empty strings (never started)."""
    missing: tuple[str, ...]
    """The unset variable names, in reference order."""
    error: ConfigError
    """The ``ConfigError`` that using the entry raises (today's message, naming the first unset variable)."""


@dataclass(frozen=True, slots=True)
class HostConfig:
    """The loaded host configuration: provider entries in document order, and where they came from."""

    providers: Mapping[str, EntryConfig]
    """Usable entries keyed by provider name, in document order."""
    source: str
    """The absolute path of the loaded file, or ``"<built-in>"``."""
    keep_runs: int = DEFAULT_KEEP_RUNS
    """``[host] keep_runs``: how many of the newest run records retention keeps."""
    max_concurrent_runs: int = DEFAULT_MAX_CONCURRENT_RUNS
    """``[host] max_concurrent_runs``: how many runs, foreground and background together, may be alive at once."""
    max_finished_jobs: int = DEFAULT_MAX_FINISHED_JOBS
    """``[host] max_finished_jobs``: how many finished background jobs are kept (oldest evicted first)."""
    max_finished_job_output_bytes: int = DEFAULT_MAX_FINISHED_JOB_OUTPUT_BYTES
    """``[host] max_finished_job_output_bytes``: the bytes of finished jobs' texts kept (oldest evicted first)."""
    default_provider: str | None = None
    """``[host] default_provider``: the entry ``subagent-host run`` uses without ``--provider`` (validated to name
    one)."""
    max_warm_sessions: int = DEFAULT_MAX_WARM_SESSIONS
    """``[host] max_warm_sessions``: how many sessions keep a warm child (the least recently used idle goes cold)."""
    session_ttl_days: int = DEFAULT_SESSION_TTL_DAYS
    """``[host] session_ttl_days``: a session unused for longer is closed."""
    unresolved: Mapping[str, UnresolvedEntry] = field(default_factory=lambda: MappingProxyType({}))
    """Entries that need an unset host variable; they register no tool and fail with their error when used."""
    searched: tuple[str, ...] = ()
    """For the built-in default loaded by the lookup: the places searched first (for the operator's notice)."""

    def entry(self, name: str) -> EntryConfig:
        """The usable entry ``name``.

        Raises:
            ConfigError: the entry references an unset host variable (today's message, naming it).
            KeyError: no entry has that name.
        """
        if name in self.unresolved:
            raise self.unresolved[name].error
        return self.providers[name]

    def entry_names(self) -> list[str]:
        """Every configured entry name: the usable ones, then those needing an unset variable."""
        return [*self.providers, *(name for name in self.unresolved if name not in self.providers)]


def delegation_tool_name(entry_name: str) -> str:
    """The delegation tool name of an entry: ``delegate_<name>`` with every char outside ``[A-Za-z0-9_]`` → ``_``."""
    return "delegate_" + _NOT_TOOL_NAME_CHAR.sub("_", entry_name)
