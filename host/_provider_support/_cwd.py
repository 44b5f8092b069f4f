"""The child's working directory: the entry's configured one, else the parent session's, never the host's own.

A configured ``cwd`` was validated at load time; a parent session cwd is validated here, raising the raw,
host-only ``ConfigError`` of acp-provider.md §3 step 2 and sdk-provider.md §5.1 step 2 under the kind's prefix.
"""

from __future__ import annotations

import os
import stat
from typing import Final

from host._exceptions import ConfigError

__all__ = ["resolve_child_cwd"]

_NO_CWD: Final = (
    "{prefix}: no working directory for the child — configure `cwd` or delegate from a parent session that has one"
)
_CWD_NOT_ABSOLUTE: Final = "{prefix}: parent session cwd must be an absolute path: {cwd}"
_CWD_NOT_ACCESSIBLE: Final = "{prefix}: parent session cwd is not an accessible directory: {cwd}"


def resolve_child_cwd(configured: str | None, parent_cwd: str | None, prefix: str) -> str:
    """The configured cwd if any, else the validated parent session cwd.

    Args:
        configured: the entry's ``cwd`` (absolute, validated at load), or ``None`` to inherit the parent's.
        parent_cwd: the parent session's working directory, if known.
        prefix: the kind's message prefix without the colon (``subagent-acp`` or ``subagent-dsh-sdk``).

    Raises:
        ConfigError: no cwd at all, or a parent cwd that is relative or not an accessible directory.
    """
    if configured is not None:
        return configured
    if parent_cwd is None:
        raise ConfigError(_NO_CWD.format(prefix=prefix))
    if not os.path.isabs(parent_cwd):
        raise ConfigError(_CWD_NOT_ABSOLUTE.format(prefix=prefix, cwd=parent_cwd))
    try:
        is_dir = stat.S_ISDIR(os.stat(parent_cwd).st_mode)
    except (OSError, ValueError):
        is_dir = False
    if not is_dir or not os.access(parent_cwd, os.X_OK):
        raise ConfigError(_CWD_NOT_ACCESSIBLE.format(prefix=prefix, cwd=parent_cwd))
    return parent_cwd
