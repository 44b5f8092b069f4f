"""Reading and validating the host's TOML config, found by the lookup order of ``_lookup``.

Every failure is a ``ConfigError``. A relative config path resolves against the working directory; inside the file,
a relative ``cwd`` and a ``command`` holding a slash resolve against the file's directory. An entry whose ``env``
names an unset host variable fails only when it is used (``HostConfig.unresolved``).
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Final, cast

from host._exceptions import ConfigError
from host.config._acp import validate_acp_entry
from host.config._lookup import CONFIG_ENV_VAR, DEFAULT_CONFIG_FILENAME, find_config
from host.config._models import (
    DEFAULT_KEEP_RUNS,
    DEFAULT_MAX_CONCURRENT_RUNS,
    DEFAULT_MAX_FINISHED_JOB_OUTPUT_BYTES,
    DEFAULT_MAX_FINISHED_JOBS,
    DEFAULT_MAX_WARM_SESSIONS,
    DEFAULT_SESSION_TTL_DAYS,
    AcpEntryConfig,
    EntryConfig,
    HostConfig,
    UnresolvedEntry,
    delegation_tool_name,
)
from host.config._rules import check_positive_safe_integer
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
        cwd: The host's working directory at load time (default ``os.getcwd()``): the lookup starts there and a
            relative ``path`` resolves against it.
        environ: The unscrubbed host environment (default ``os.environ``): ``$SUBAGENT_HOST_CONFIG`` and
            ``${NAME}`` references are read from it.

    Raises:
        ConfigError: The file is unreadable, not TOML, or fails validation.
    """
    environ = os.environ if environ is None else environ
    base_dir = os.path.abspath(os.getcwd() if cwd is None else cwd)
    lookup = find_config(path, base_dir=base_dir, environ=environ)
    config_path = lookup.path
    if config_path is None:
        logger.debug("no config file found; using the built-in default")
        builtin = builtin_config()
        return HostConfig(providers=builtin.providers, source=builtin.source, searched=lookup.searched)
    document = _read_toml(config_path)
    config = parse_config(document, source=config_path, base_dir=os.path.dirname(config_path), environ=environ)
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
        base_dir: Where relative entry paths resolve (``load_config`` passes the file's directory; default
            ``os.getcwd()``).
        environ: The unscrubbed host environment (default ``os.environ``).

    Raises:
        ConfigError: The first failed check.
    """
    environ = os.environ if environ is None else environ
    base_dir = os.path.abspath(os.getcwd() if base_dir is None else base_dir)
    for key in document:
        if key not in ("providers", "host"):
            raise ConfigError(f'{_HOST_PREFIX}unknown top-level config key "{key}"')
    host_settings = _validate_host_table(document.get("host"))
    providers = document.get("providers")
    if providers is None:
        raise ConfigError(f"{_HOST_PREFIX}{source} configures no providers")
    if not isinstance(providers, Mapping):
        raise ConfigError(f"{_HOST_PREFIX}providers must be a table")
    entries = cast("Mapping[str, object]", providers)
    if not entries:
        raise ConfigError(f"{_HOST_PREFIX}{source} configures no providers")
    validated: dict[str, EntryConfig] = {}
    unresolved: dict[str, UnresolvedEntry] = {}
    tool_owners: dict[str, str] = {}
    for name, table in entries.items():
        try:
            # Validate the whole entry first with unset references read as "": only a clean entry may be deferred.
            lenient = _RecordingEnviron(environ)
            entry = _validate_entry(name, table, base_dir=base_dir, environ=lenient)
            if lenient.missing:
                error = _unset_error(name, table, base_dir=base_dir, environ=environ)
                unresolved[name] = UnresolvedEntry(entry, tuple(lenient.missing), error)
            else:
                validated[name] = entry
        except ConfigError as exc:
            # The entry's messages are pinned by the spec and do not name the entry: carry it alongside.
            exc.provider, exc.source = name, source
            raise
        if name in unresolved:
            unresolved[name].error.provider, unresolved[name].error.source = name, source
        tool = delegation_tool_name(name)
        if tool in tool_owners:
            first = tool_owners[tool]
            raise ConfigError(
                f'{_HOST_PREFIX}providers.{first} and providers.{name} would both register the tool "{tool}"'
            )
        tool_owners[tool] = name
    default = host_settings.default_provider
    if default is not None and default not in entries:
        configured = ", ".join(entries)
        raise ConfigError(
            f'{_HOST_PREFIX}host.default_provider "{default}" names no provider entry (configured: {configured})'
        )
    return HostConfig(
        providers=MappingProxyType(validated),
        source=source,
        keep_runs=host_settings.keep_runs,
        max_concurrent_runs=host_settings.max_concurrent_runs,
        max_finished_jobs=host_settings.max_finished_jobs,
        max_finished_job_output_bytes=host_settings.max_finished_job_output_bytes,
        max_warm_sessions=host_settings.max_warm_sessions,
        session_ttl_days=host_settings.session_ttl_days,
        unresolved=MappingProxyType(unresolved),
        default_provider=default,
    )


@dataclass(frozen=True, slots=True)
class _HostSettings:
    keep_runs: int = DEFAULT_KEEP_RUNS
    max_concurrent_runs: int = DEFAULT_MAX_CONCURRENT_RUNS
    max_finished_jobs: int = DEFAULT_MAX_FINISHED_JOBS
    max_finished_job_output_bytes: int = DEFAULT_MAX_FINISHED_JOB_OUTPUT_BYTES
    default_provider: str | None = None
    max_warm_sessions: int = DEFAULT_MAX_WARM_SESSIONS
    session_ttl_days: int = DEFAULT_SESSION_TTL_DAYS


_HOST_KEYS: Final = (
    "keep_runs",
    "max_concurrent_runs",
    "max_finished_jobs",
    "max_finished_job_output_bytes",
    "default_provider",
    "max_warm_sessions",
    "session_ttl_days",
)


def _validate_host_table(table: object) -> _HostSettings:
    """Validate the optional ``[host]`` table: ``keep_runs`` (an integer >= 0), ``max_concurrent_runs``,
    ``max_finished_jobs`` and ``max_finished_job_output_bytes`` (positive safe integers), ``default_provider`` (a
    string; that it names an entry is checked once the entries are read)."""
    if table is None:
        return _HostSettings()
    if not isinstance(table, Mapping):
        raise ConfigError(f"{_HOST_PREFIX}host must be a table")
    settings = cast("Mapping[str, object]", table)
    for key in settings:
        if key not in _HOST_KEYS:
            raise ConfigError(f'{_HOST_PREFIX}unknown config key "host.{key}"')
    keep_runs = settings.get("keep_runs", DEFAULT_KEEP_RUNS)
    if type(keep_runs) is not int or keep_runs < 0:
        raise ConfigError(f"{_HOST_PREFIX}host.keep_runs must be an integer >= 0")
    prefix = f"{_HOST_PREFIX}host."
    max_runs = check_positive_safe_integer(settings, "max_concurrent_runs", prefix)
    max_jobs = check_positive_safe_integer(settings, "max_finished_jobs", prefix)
    max_bytes = check_positive_safe_integer(settings, "max_finished_job_output_bytes", prefix)
    default_provider = settings.get("default_provider")
    if default_provider is not None and not isinstance(default_provider, str):
        raise ConfigError(f"{_HOST_PREFIX}host.default_provider must be a string")
    max_warm = check_positive_safe_integer(settings, "max_warm_sessions", prefix)
    ttl_days = check_positive_safe_integer(settings, "session_ttl_days", prefix)
    return _HostSettings(
        default_provider=default_provider,
        keep_runs=keep_runs,
        max_concurrent_runs=DEFAULT_MAX_CONCURRENT_RUNS if max_runs is None else max_runs,
        max_finished_jobs=DEFAULT_MAX_FINISHED_JOBS if max_jobs is None else max_jobs,
        max_finished_job_output_bytes=DEFAULT_MAX_FINISHED_JOB_OUTPUT_BYTES if max_bytes is None else max_bytes,
        max_warm_sessions=DEFAULT_MAX_WARM_SESSIONS if max_warm is None else max_warm,
        session_ttl_days=DEFAULT_SESSION_TTL_DAYS if ttl_days is None else ttl_days,
    )


def builtin_config() -> HostConfig:
    """The built-in default: one ACP entry ``echo`` running the built-in echo agent with this interpreter."""
    entry = AcpEntryConfig(
        name="echo", command=sys.executable, args=("-I", "-S", _bundled_acp_agent()), description=BUILTIN_DESCRIPTION
    )
    return HostConfig(providers=MappingProxyType({"echo": entry}), source=BUILTIN_SOURCE)


class _RecordingEnviron(Mapping[str, str]):
    """The host environment, where an unset name reads as ``""`` and is recorded in ``missing``."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._environ = environ
        self.missing: list[str] = []

    def __getitem__(self, name: str) -> str:
        try:
            return self._environ[name]
        except KeyError:
            if name not in self.missing:
                self.missing.append(name)
            return ""

    def __iter__(self) -> Iterator[str]:
        return iter(self._environ)

    def __len__(self) -> int:
        return len(self._environ)


def _unset_error(name: str, table: object, *, base_dir: str, environ: Mapping[str, str]) -> ConfigError:
    """The error that using an entry with an unset reference raises: today's message, for its first one."""
    try:
        _validate_entry(name, table, base_dir=base_dir, environ=environ)
    except ConfigError as exc:
        return exc
    raise AssertionError("an entry with an unset reference validated against an empty environment")


def _read_toml(config_path: str) -> dict[str, object]:
    """Read and parse one TOML file, mapping I/O and syntax failures to ``ConfigError``."""
    import tomllib  # only when a config file is read: the built-in echo needs no parser (the cold start)

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
