"""Per-key checks shared by both entry kinds; each raises ``ConfigError`` with the spec's exact message.

Every check takes the kind's message prefix (``subagent-acp: `` or ``subagent-dsh-sdk: ``) so one rule serves both
specs. The checks never echo an environment variable's value.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Collection, Mapping
from typing import Final, TypedDict, cast

from host._exceptions import ConfigError, UnsetHostVariableError
from host._json import MAX_SAFE_INTEGER
from host.cancel import MAX_TIMER_DELAY_MS
from host.config._env_refs import expand_env_references
from host.config._models import MAX_BASELINE_BYTES, SESSION_IDLE_MS, SETUP_TIMEOUT_MS, InheritEnv, WorkspaceMode

__all__ = [
    "SHARED_KEYS",
    "Launch",
    "Placement",
    "check_args",
    "check_command",
    "check_cwd",
    "check_description",
    "check_env",
    "check_inherit_env",
    "check_launch",
    "check_non_empty_string",
    "check_optional_positive_ms",
    "check_placement",
    "check_positive_ms",
    "check_positive_safe_integer",
    "check_session_idle_ms",
    "is_accessible_directory",
    "reject_unknown_keys",
]


_ANY_EXECUTE_BIT: Final = stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH

SHARED_KEYS: Final = frozenset(
    {
        "kind",
        "command",
        "args",
        "cwd",
        "env",
        "inherit_env",
        "dispose_eof_grace_ms",
        "dispose_grace_ms",
        "timeout_ms",
        "max_output_bytes",
        "description",
        "workspace",
        "setup",
        "setup_timeout_ms",
        "max_baseline_bytes",
        "session_idle_ms",
    }
)
"""The keys both entry kinds accept; each kind adds its own."""


class Launch(TypedDict):
    """The entry fields of the steps both kinds check first, in this order: how the child is started."""

    command: str
    args: tuple[str, ...]
    env: dict[str, str]
    inherit_env: InheritEnv


class Placement(TypedDict):
    """The entry fields of the steps both kinds check last, in this order."""

    cwd: str | None
    description: str | None
    workspace: WorkspaceMode
    setup: tuple[str, ...] | None
    setup_timeout_ms: float
    max_baseline_bytes: int
    session_idle_ms: float


def check_launch(
    table: Mapping[str, object], allowed: Collection[str], prefix: str, environ: Mapping[str, str], base_dir: str
) -> Launch:
    """The first steps of both kinds: unknown keys, then ``command``, ``args``, ``env`` and ``inherit_env``.

    A ``command`` holding a slash resolves against ``base_dir`` (the config file's directory); a bare name is
    looked up on ``PATH`` when the child is spawned.
    """
    reject_unknown_keys(table, allowed, prefix)
    command = check_command(table, prefix)
    if "/" in command:
        command = os.path.abspath(os.path.join(base_dir, command))
    args = check_args(table, prefix)
    env = check_env(table, prefix, environ)
    return Launch(command=command, args=args, env=env, inherit_env=check_inherit_env(table, prefix))


def check_inherit_env(table: Mapping[str, object], prefix: str) -> InheritEnv:
    """``inherit_env``: ``"scrubbed"`` (the default) or ``"minimal"``."""
    value = table.get("inherit_env", "scrubbed")
    if value == "scrubbed":
        return "scrubbed"
    if value == "minimal":
        return "minimal"
    raise ConfigError(f'{prefix}inherit_env must be "scrubbed" or "minimal"')


def check_placement(table: Mapping[str, object], prefix: str, base_dir: str) -> Placement:
    """The last steps of both kinds: ``cwd``, ``description`` (docs/behaviour.md#results-foreground-tool), then
    the workspace keys (docs/behaviour.md#workspaces), then ``session_idle_ms`` (docs/behaviour.md#sessions)."""
    cwd = check_cwd(table, prefix, base_dir)
    description = check_description(table, prefix)
    workspace = table.get("workspace", "shared")
    if workspace not in ("shared", "worktree"):
        raise ConfigError(f'{prefix}workspace must be "shared" or "worktree"')
    setup: tuple[str, ...] | None = None
    if "setup" in table:
        raw = table["setup"]
        items = cast("list[object]", raw) if isinstance(raw, list | tuple) else None
        if not items or not all(isinstance(item, str) and item for item in items):
            raise ConfigError(
                f"{prefix}setup must be a non-empty array of non-empty strings (an argv, never a shell string)"
            )
        setup = tuple(str(item) for item in items)
    setup_timeout = check_positive_ms(table, "setup_timeout_ms", SETUP_TIMEOUT_MS, prefix, limit=MAX_TIMER_DELAY_MS)
    max_baseline = check_positive_safe_integer(table, "max_baseline_bytes", prefix)
    return Placement(
        cwd=cwd,
        description=description,
        workspace="worktree" if workspace == "worktree" else "shared",
        setup=setup,
        setup_timeout_ms=setup_timeout,
        max_baseline_bytes=MAX_BASELINE_BYTES if max_baseline is None else max_baseline,
        session_idle_ms=check_session_idle_ms(table, prefix),
    )


def check_session_idle_ms(table: Mapping[str, object], prefix: str) -> float:
    """``session_idle_ms``: a finite number of milliseconds ``>= 0`` (``0``: no warm child after a turn)."""
    value = table.get("session_idle_ms", SESSION_IDLE_MS)
    message = f"{prefix}session_idle_ms must be a finite number >= 0 no greater than {MAX_TIMER_DELAY_MS}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(message)
    try:
        milliseconds = float(value)
    except OverflowError:
        raise ConfigError(message) from None
    if not math.isfinite(milliseconds) or milliseconds < 0 or milliseconds > MAX_TIMER_DELAY_MS:
        raise ConfigError(message)
    return milliseconds


def reject_unknown_keys(table: Mapping[str, object], allowed: Collection[str], prefix: str) -> None:
    """Reject the first key (in document order) outside ``allowed``."""
    for key in table:
        if key not in allowed:
            raise ConfigError(f'{prefix}unknown config key "{key}"')


def check_command(table: Mapping[str, object], prefix: str) -> str:
    """``command``: required, a non-empty string."""
    if "command" not in table:
        raise ConfigError(f"{prefix}command is required")
    command = table["command"]
    if not isinstance(command, str) or not command:
        raise ConfigError(f"{prefix}command must be a non-empty string")
    return command


def check_args(table: Mapping[str, object], prefix: str) -> tuple[str, ...]:
    """``args``: an array of strings, default empty."""
    args = table.get("args", [])
    if not isinstance(args, list | tuple):
        raise ConfigError(f"{prefix}args must be an array of strings")
    items = cast("list[object] | tuple[object, ...]", args)
    if not all(isinstance(item, str) for item in items):
        raise ConfigError(f"{prefix}args must be an array of strings")
    return tuple(str(item) for item in items)


def check_env(table: Mapping[str, object], prefix: str, environ: Mapping[str, str]) -> dict[str, str]:
    """``env``: a table of strings whose ``${NAME}`` references are expanded against ``environ``.

    Every value's type is checked before any reference is expanded, in the spec's step order.
    """
    env = table.get("env", {})
    if not isinstance(env, Mapping):
        raise ConfigError(f"{prefix}env must be a table of strings")
    values: dict[str, str] = {}
    for key, value in cast("Mapping[str, object]", env).items():
        if not isinstance(value, str):
            raise ConfigError(f"{prefix}env.{key} must be a string")
        values[key] = value
    expanded: dict[str, str] = {}
    for key, value in values.items():
        try:
            expanded[key] = expand_env_references(value, environ)
        except UnsetHostVariableError as unset:
            raise ConfigError(f"{prefix}env.{key} references unset host variable ${{{unset.name}}}") from None
    return expanded


def check_non_empty_string(table: Mapping[str, object], key: str, default: str, prefix: str) -> str:
    """A string key that must not be empty when present."""
    value = table.get(key, default)
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{prefix}{key} must be a non-empty string")
    return value


def check_positive_ms(
    table: Mapping[str, object], key: str, default: float, prefix: str, *, limit: int | None
) -> float:
    """A millisecond number with a default: see ``check_optional_positive_ms``."""
    value = check_optional_positive_ms(table, key, prefix, limit=limit)
    return default if value is None else value


def check_optional_positive_ms(
    table: Mapping[str, object], key: str, prefix: str, *, limit: int | None
) -> float | None:
    """A millisecond number: int or float (never bool), finite, ``> 0`` and, with ``limit``, ``<= limit``."""
    if key not in table:
        return None
    value = table[key]
    suffix = "" if limit is None else f" no greater than {limit}"
    message = f"{prefix}{key} must be a positive finite number{suffix}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(message)
    if value <= 0 or (limit is not None and value > limit):
        raise ConfigError(message)
    try:
        milliseconds = float(value)
    except OverflowError:
        # An integer beyond float range is not a finite number of milliseconds.
        raise ConfigError(message) from None
    if not math.isfinite(milliseconds):
        raise ConfigError(message)
    return milliseconds


def check_positive_safe_integer(table: Mapping[str, object], key: str, prefix: str) -> int | None:
    """An optional integer in 1 … 2^53−1; floats (even integral ones) and bools fail."""
    if key not in table:
        return None
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_SAFE_INTEGER:
        raise ConfigError(f"{prefix}{key} must be a positive safe integer")
    return value


def check_cwd(table: Mapping[str, object], prefix: str, base_dir: str) -> str | None:
    """``cwd``: resolved once, lexically, against ``base_dir``; must be an accessible directory at load time."""
    if "cwd" not in table:
        return None
    cwd = table["cwd"]
    if not isinstance(cwd, str):
        raise ConfigError(f"{prefix}cwd must be a string")
    if not cwd:
        raise ConfigError(f"{prefix}config cwd must not be empty \u2014 omit the key to inherit the parent session cwd")
    # abspath, never realpath: the child and the wire see the path as configured
    # (docs/behaviour.md#acp-working-directory).
    resolved = os.path.abspath(os.path.join(base_dir, cwd))
    if not is_accessible_directory(resolved):
        raise ConfigError(f"{prefix}config cwd is not an accessible directory: {resolved}")
    return resolved


def check_description(table: Mapping[str, object], prefix: str) -> str | None:
    """``description``: an optional string."""
    if "description" not in table:
        return None
    description = table["description"]
    if not isinstance(description, str):
        raise ConfigError(f"{prefix}description must be a string")
    return description


def is_accessible_directory(path: str) -> bool:
    """Whether ``path`` is an existing directory this process may search.

    Root passes ``os.access(X_OK)`` on any directory, so a directory must also carry at least one execute bit:
    a mode-``0600`` directory is refused whoever runs the host.
    """
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        # ValueError: an embedded NUL byte.
        return False
    if not stat.S_ISDIR(info.st_mode) or not info.st_mode & _ANY_EXECUTE_BIT:
        return False
    return os.access(path, os.X_OK)
