"""Where the host's config file is: the lookup order, and what was searched when nothing was found.

Order: the explicit path (``--config``), ``$SUBAGENT_HOST_CONFIG`` (a missing file is an error, never a fallback),
``subagent-host.toml`` in the working directory and then each parent directory up to the filesystem root, the
user config file (``config.toml`` in the ``platformdirs`` user config dir), and only then the built-in ``echo``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

__all__ = [
    "APP_NAME",
    "CONFIG_ENV_VAR",
    "DEFAULT_CONFIG_FILENAME",
    "USER_CONFIG_FILENAME",
    "Lookup",
    "find_config",
    "user_config_file",
]

APP_NAME: Final = "subagent-host"
CONFIG_ENV_VAR: Final = "SUBAGENT_HOST_CONFIG"
"""Names the config file when no explicit path is given (lookup step 2)."""
DEFAULT_CONFIG_FILENAME: Final = "subagent-host.toml"
"""Looked up in the working directory and each of its parents (lookup step 3)."""
USER_CONFIG_FILENAME: Final = "config.toml"
"""The file name inside the user config directory (lookup step 4)."""


@dataclass(frozen=True, slots=True)
class Lookup:
    """The outcome of the lookup: the file to load (``None``: the built-in default) and what was searched."""

    path: str | None
    searched: tuple[str, ...]
    """Human-readable places looked at, in order (only meaningful when ``path`` is ``None``)."""


def find_config(path: str | os.PathLike[str] | None, *, base_dir: str, environ: Mapping[str, str]) -> Lookup:
    """Run the lookup order from ``base_dir`` (the working directory); nothing is read but file existence."""
    if path is not None:
        return Lookup(os.path.abspath(os.path.join(base_dir, os.fspath(path))), ())
    from_env = environ.get(CONFIG_ENV_VAR)
    if from_env:
        # Named explicitly: a missing file is reported by the reader, never silently replaced by the default.
        return Lookup(os.path.abspath(os.path.join(base_dir, from_env)), ())
    directory = base_dir
    while True:
        candidate = os.path.join(directory, DEFAULT_CONFIG_FILENAME)
        if os.path.exists(candidate):
            return Lookup(candidate, ())
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    user_file = user_config_file()
    if os.path.exists(user_file):
        return Lookup(user_file, ())
    walked = f"{DEFAULT_CONFIG_FILENAME} in {base_dir} and each parent directory"
    return Lookup(None, (f"${CONFIG_ENV_VAR}", walked, user_file))


def user_config_file() -> str:
    """``config.toml`` in the platform's user config directory for ``subagent-host``."""
    import platformdirs  # only when the lookup gets this far: it is not needed by any earlier step

    return os.path.join(platformdirs.user_config_dir(APP_NAME), USER_CONFIG_FILENAME)
