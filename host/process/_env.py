"""The child environment: the host's ambient variables minus credential-shaped names, then the explicit entries.

Ambient names containing KEY, PASSWORD, SECRET or TOKEN (case-insensitive substring) or starting with ``DSH_``
(case-insensitive) never reach a child unless configured explicitly; explicit entries always win.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import Final

__all__ = ["build_child_env", "scrub_environment"]

# Substrings that mark an ambient variable name as credential-shaped (compared upper-cased).
_CREDENTIAL_WORDS: Final = ("KEY", "PASSWORD", "SECRET", "TOKEN")
# Prefix of the host's own control variables, never inherited implicitly (compared upper-cased).
_HOST_PREFIX: Final = "DSH_"


# Cached by name: every spawn filters the same ambient names again, and the test is pure.
@functools.lru_cache(maxsize=4096)
def _is_scrubbed(name: str) -> bool:
    upper = name.upper()
    return upper.startswith(_HOST_PREFIX) or any(word in upper for word in _CREDENTIAL_WORDS)


def scrub_environment(ambient: Mapping[str, str]) -> dict[str, str]:
    """Return a copy of ``ambient`` without credential-shaped or ``DSH_*`` names.

    Args:
        ambient: The host environment to filter (usually ``os.environ``).
    """
    return {name: value for name, value in ambient.items() if not _is_scrubbed(name)}


def build_child_env(explicit: Mapping[str, str], ambient: Mapping[str, str] | None = None) -> dict[str, str]:
    """Build a child's environment: the scrubbed ambient environment with ``explicit`` set on top.

    Args:
        explicit: Configured entries (already ``${NAME}``-expanded); they win even for credential-shaped names.
        ambient: The environment to scrub; ``os.environ`` when ``None``.
    """
    env = scrub_environment(os.environ if ambient is None else ambient)
    env.update(explicit)
    return env
