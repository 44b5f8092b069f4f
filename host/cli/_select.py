"""The config a command works on: the lookup (with the operator's notice), the chosen entries, per-run overrides."""

from __future__ import annotations

import dataclasses
import os
from types import MappingProxyType
from typing import Final

from host import AcpEntryConfig, ConfigError, EntryConfig, HostConfig, load_config
from host.cli._output import Output

__all__ = [
    "DEFAULT_PROVIDER",
    "UsageError",
    "choose_provider",
    "config_error_text",
    "load",
    "no_config_notice",
    "with_overrides",
    "workspace",
]

DEFAULT_PROVIDER: Final = "echo"
"""Used when several providers are configured, neither ``--provider`` nor ``[host] default_provider`` names one, and
one of them is named ``echo``."""


class UsageError(Exception):
    """A bad provider choice, workspace or override: exit 2 with a one-line message."""


def load(path: str | None, output: Output) -> HostConfig:
    """Load the config by the lookup order; when it falls back to the built-in echo, say so on stderr.

    Raises:
        ConfigError: the file named by ``path`` or ``$SUBAGENT_HOST_CONFIG`` is missing, unreadable or invalid.
    """
    config = load_config(path)
    notice = no_config_notice(config)
    if notice is not None:
        output.err(notice)
    return config


def no_config_notice(config: HostConfig) -> str | None:
    """The stderr line every command prints when the lookup found no file and fell back to the built-in echo."""
    if not config.searched:
        return None
    searched = "; ".join(config.searched)
    return f"subagent-host: no config found (searched {searched}); using the built-in echo provider\n"


def choose_provider(config: HostConfig, requested: str | None) -> str:
    """The entry ``run`` uses: ``requested``, else ``[host] default_provider``, else the only one, else ``echo``."""
    names = config.entry_names()
    if requested is not None:
        if requested not in names:
            raise UsageError(f'subagent-host: unknown provider "{requested}" (configured: {", ".join(names)})')
        return requested
    if config.default_provider is not None:  # the loader checked that it names an entry
        return config.default_provider
    if len(names) == 1:
        return names[0]
    if DEFAULT_PROVIDER in names:
        return DEFAULT_PROVIDER
    raise UsageError(
        f"subagent-host: several providers are configured ({', '.join(names)}); choose one with --provider "
        "or set [host] default_provider"
    )


def with_overrides(
    config: HostConfig,
    name: str,
    *,
    permission: str | None,
    timeout_ms: float | None,
    workspace: str | None = None,
) -> tuple[HostConfig, EntryConfig]:
    """The config with only the entry ``name`` (resolved now) and the per-run overrides applied; ``[host]`` kept.

    Raises:
        ConfigError: the entry references an unset host variable.
        UsageError: ``--permission`` was given for an entry that is not ACP.
    """
    entry = config.entry(name)
    update: dict[str, object] = {}
    if permission is not None:
        if not isinstance(entry, AcpEntryConfig):
            raise UsageError(
                f"subagent-host: --permission applies to ACP entries only (providers.{name} is {entry.kind})"
            )
        update["permission"] = permission
    if timeout_ms is not None:
        update["timeout_ms"] = timeout_ms
    if workspace is not None:
        update["workspace"] = workspace
    # The command is a one-shot caller: its host ends with the run, so no child is kept warm after the turn (the
    # session stays resumable cold: docs/behaviour.md#sessions).
    update["session_idle_ms"] = 0.0
    entry = entry.model_copy(update=update)
    # Only this entry; every [host] setting (keep_runs, the job bounds) stays as configured.
    only = dataclasses.replace(
        config,
        providers=MappingProxyType({name: entry}),
        unresolved=MappingProxyType({}),
        default_provider=None,
    )
    return only, entry


def workspace(cwd: str | None) -> str:
    """The absolute parent workspace (``--cwd`` or the working directory)."""
    path = os.path.abspath(cwd if cwd is not None else os.getcwd())
    if not os.path.isdir(path):
        raise UsageError(f"subagent-host: --cwd is not a directory: {path}")
    return path


def config_error_text(error: ConfigError) -> str:
    """The spec's exact message, followed by the entry and file it is about when known."""
    if error.provider is None:
        return str(error)
    where = f"providers.{error.provider}" + (f" in {error.source}" if error.source else "")
    return f"{error} ({where})"
