"""Finding, reading and validating the host's TOML config.

Lookup order: the explicit path (``--config``), then ``$SUBAGENT_HOST_CONFIG``, then ``./subagent-host.toml`` in
the working directory, then the built-in ``echo`` entry. Every failure is a ``ConfigError``; a relative path or
config ``cwd`` resolves against the host's working directory at load time.
"""

from __future__ import annotations

import logging
import os
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Final, cast

from host._exceptions import ConfigError
from host.config._acp import validate_acp_entry
from host.config._models import DEFAULT_KEEP_RUNS, AcpEntryConfig, EntryConfig, HostConfig, delegation_tool_name
from host.config._sdk import validate_sdk_entry

__all__ = [
    "BUILTIN_DESCRIPTION",
    "BUILTIN_SOURCE",
    "CONFIG_ENV_VAR",
    "DEFAULT_CONFIG_FILENAME",
    "builtin_config",
    "load_config",
    "parse_config",
]

logger = logging.getLogger(__name__)

CONFIG_ENV_VAR: Final = "SUBAGENT_HOST_CONFIG"
"""Names the config file when no explicit path is given (lookup step 2)."""
DEFAULT_CONFIG_FILENAME: Final = "subagent-host.toml"
"""Looked up in the working directory when neither an explicit path nor the variable is set (lookup step 3)."""
BUILTIN_SOURCE: Final = "<built-in>"
"""``HostConfig.source`` of the built-in default."""
BUILTIN_DESCRIPTION: Final = "Built-in echo ACP agent (answers with the task text); for trying subagent-host out"
"""The delegation tool description of the built-in ``echo`` entry."""

_HOST_PREFIX: Final = "subagent-host: "


def load_config(
    path: str | os.PathLike[str] | None = None,
    *,
    cwd: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> HostConfig:
    """Load the host config from the first source in the lookup order.

    Args:
        path: An explicit config file (``--config``); wins over every other source.
        cwd: The host's working directory at load time (default ``os.getcwd()``). Relative paths and relative
            entry ``cwd`` values resolve against it.
        environ: The unscrubbed host environment (default ``os.environ``): ``$SUBAGENT_HOST_CONFIG`` and
            ``${NAME}`` references are read from it.

    Raises:
        ConfigError: The file is unreadable, not TOML, or fails validation.
    """
    environ = os.environ if environ is None else environ
    base_dir = os.path.abspath(os.getcwd() if cwd is None else cwd)
    config_path = _find_config_file(path, base_dir=base_dir, environ=environ)
    if config_path is None:
        logger.debug("no config file found; using the built-in default")
        return builtin_config()
    document = _read_toml(config_path)
    config = parse_config(document, source=config_path, base_dir=base_dir, environ=environ)
    logger.debug("loaded config from %s: providers %s", config_path, list(config.providers))
    return config


def parse_config(
    document: Mapping[str, object],
    *,
    source: str = "<mapping>",
    base_dir: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> HostConfig:
    """Validate a config document shaped like the TOML file (``{"providers": {name: entry, ...}}``).

    Args:
        document: The parsed TOML document, or a dict of the same shape.
        source: What to name the document in errors and in ``HostConfig.source``.
        base_dir: The host's working directory at load time (default ``os.getcwd()``).
        environ: The unscrubbed host environment (default ``os.environ``).

    Raises:
        ConfigError: The first failed check.
    """
    environ = os.environ if environ is None else environ
    base_dir = os.path.abspath(os.getcwd() if base_dir is None else base_dir)
    for key in document:
        if key not in ("providers", "host"):
            raise ConfigError(f'{_HOST_PREFIX}unknown top-level config key "{key}"')
    keep_runs = _validate_host_table(document.get("host"))
    providers = document.get("providers")
    if providers is None:
        raise ConfigError(f"{_HOST_PREFIX}{source} configures no providers")
    if not isinstance(providers, Mapping):
        raise ConfigError(f"{_HOST_PREFIX}providers must be a table")
    entries = cast("Mapping[str, object]", providers)
    if not entries:
        raise ConfigError(f"{_HOST_PREFIX}{source} configures no providers")
    validated: dict[str, EntryConfig] = {}
    tool_owners: dict[str, str] = {}
    for name, table in entries.items():
        try:
            validated[name] = _validate_entry(name, table, base_dir=base_dir, environ=environ)
        except ConfigError as exc:
            # The entry's messages are pinned by the spec and do not name the entry: carry it alongside.
            exc.provider, exc.source = name, source
            raise
        tool = delegation_tool_name(name)
        if tool in tool_owners:
            first = tool_owners[tool]
            raise ConfigError(
                f'{_HOST_PREFIX}providers.{first} and providers.{name} would both register the tool "{tool}"'
            )
        tool_owners[tool] = name
    return HostConfig(providers=MappingProxyType(validated), source=source, keep_runs=keep_runs)


def _validate_host_table(table: object) -> int:
    """Validate the optional ``[host]`` table (only ``keep_runs``, an integer >= 0) and return ``keep_runs``."""
    if table is None:
        return DEFAULT_KEEP_RUNS
    if not isinstance(table, Mapping):
        raise ConfigError(f"{_HOST_PREFIX}host must be a table")
    settings = cast("Mapping[str, object]", table)
    for key in settings:
        if key != "keep_runs":
            raise ConfigError(f'{_HOST_PREFIX}unknown config key "host.{key}"')
    keep_runs = settings.get("keep_runs", DEFAULT_KEEP_RUNS)
    if type(keep_runs) is not int or keep_runs < 0:
        raise ConfigError(f"{_HOST_PREFIX}host.keep_runs must be an integer >= 0")
    return keep_runs


def builtin_config() -> HostConfig:
    """The built-in default: one ACP entry ``echo`` running the built-in echo agent with this interpreter."""
    entry = AcpEntryConfig(
        name="echo", command=sys.executable, args=("-I", "-S", _bundled_acp_agent()), description=BUILTIN_DESCRIPTION
    )
    return HostConfig(providers=MappingProxyType({"echo": entry}), source=BUILTIN_SOURCE)


def _find_config_file(path: str | os.PathLike[str] | None, *, base_dir: str, environ: Mapping[str, str]) -> str | None:
    """The absolute path of the config file to load, or ``None`` for the built-in default."""
    if path is not None:
        return os.path.abspath(os.path.join(base_dir, os.fspath(path)))
    from_env = environ.get(CONFIG_ENV_VAR)
    if from_env:
        return os.path.abspath(os.path.join(base_dir, from_env))
    candidate = os.path.join(base_dir, DEFAULT_CONFIG_FILENAME)
    return candidate if os.path.exists(candidate) else None


def _read_toml(config_path: str) -> dict[str, object]:
    """Read and parse one TOML file, mapping I/O and syntax failures to ``ConfigError``."""
    try:
        with open(config_path, "rb") as file:
            return tomllib.load(file)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError(f"{_HOST_PREFIX}cannot read config file {config_path}: {reason}") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{_HOST_PREFIX}{config_path} is not valid TOML: {exc}") from exc


def _validate_entry(name: str, table: object, *, base_dir: str, environ: Mapping[str, str]) -> EntryConfig:
    """Dispatch one ``[providers.<name>]`` table to its kind's validator."""
    if not isinstance(table, Mapping):
        raise ConfigError(f"{_HOST_PREFIX}providers.{name} must be a table")
    entry = cast("Mapping[str, object]", table)
    kind = entry.get("kind")
    if kind == "acp":
        return validate_acp_entry(name, entry, base_dir=base_dir, environ=environ)
    if kind == "dsh-sdk":
        return validate_sdk_entry(name, entry, base_dir=base_dir, environ=environ)
    raise ConfigError(f'{_HOST_PREFIX}providers.{name}.kind must be "acp" or "dsh-sdk"')


def _bundled_acp_agent() -> str:
    """The absolute path of the built-in echo agent, ``host/_echo_agent.py`` (stdlib only, run isolated)."""
    return str(Path(__file__).resolve().parent.parent / "_echo_agent.py")
