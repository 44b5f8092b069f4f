"""What ``serve`` and ``ui`` share about who may connect: the ``--auth-token-file`` and whether a host is loopback."""

from __future__ import annotations

import ipaddress
import os
import stat

__all__ = ["is_loopback", "read_token_file"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is loopback."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def read_token_file(path: str) -> str:
    """The token in ``path`` (stripped), from a file only its owner can read.

    Raises:
        ValueError: the file is unreadable, readable by group or others, or empty (the text is the CLI's message).
    """
    try:
        info = os.stat(path)
        with open(path, encoding="utf-8") as file:
            token = file.read().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"subagent-host: cannot read --auth-token-file: {exc.__class__.__name__}") from None
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise ValueError("subagent-host: --auth-token-file must not be readable by group or others (chmod 600)")
    if not token:
        raise ValueError("subagent-host: --auth-token-file is empty")
    return token
