"""Where run records live: ``--state-dir``, else ``$SUBAGENT_HOST_STATE_DIR``, else the platform's user state dir.

Directories are created private (0700) and record files are created 0600, whatever the umask: they hold task text
and child output. ``os.open`` with ``O_EXCL`` never follows or reuses an existing file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

import platformdirs

__all__ = [
    "APP_NAME",
    "STATE_DIR_ENV_VAR",
    "create_private_file",
    "ensure_runs_dir",
    "resolve_state_dir",
    "runs_dir",
]

APP_NAME: Final = "subagent-host"
"""The application name the platform state directory is derived from."""
STATE_DIR_ENV_VAR: Final = "SUBAGENT_HOST_STATE_DIR"
"""Names the state directory when no explicit one is given."""

_DIR_MODE: Final = 0o700
_FILE_MODE: Final = 0o600


def resolve_state_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The absolute state directory: ``explicit``, else ``$SUBAGENT_HOST_STATE_DIR``, else the user state dir."""
    if explicit is not None:
        return Path(os.path.abspath(os.fspath(explicit)))
    from_env = os.environ.get(STATE_DIR_ENV_VAR)
    if from_env:
        return Path(os.path.abspath(from_env))
    return Path(platformdirs.user_state_dir(APP_NAME, appauthor=False))


def runs_dir(state_dir: Path) -> Path:
    """The directory holding ``<run_id>.jsonl`` and ``<run_id>.stderr``."""
    return state_dir / "runs"


def ensure_runs_dir(state_dir: Path) -> Path:
    """Create the state and runs directories (0700 when created here) and return the runs directory.

    Raises:
        OSError: a directory could not be created.
    """
    runs = runs_dir(state_dir)
    for directory in (state_dir, runs):
        try:
            directory.mkdir(mode=_DIR_MODE, parents=True)
        except FileExistsError:
            continue
        # mkdir's mode is masked by the umask; the directory must be exactly private.
        os.chmod(directory, _DIR_MODE)
    return runs


def create_private_file(path: Path) -> int:
    """Create ``path`` exclusively with mode 0600 and return a write-only, appending descriptor.

    Raises:
        OSError: the file exists already, or could not be created.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, _FILE_MODE)
    try:
        os.fchmod(fd, _FILE_MODE)
    except OSError:
        os.close(fd)
        raise
    return fd
