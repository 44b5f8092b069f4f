"""The child environment: the host's ambient variables minus credential-shaped names, then the explicit entries.

Ambient names containing KEY, PASSWORD, PASSWD, SECRET, TOKEN, CREDENTIAL or COOKIE (case-insensitive substring),
ending in ``_PWD`` or ``_AUTH``, or starting with ``DSH_`` never reach a child unless configured explicitly
(``PWD`` itself is kept). ``inherit="minimal"`` passes only a short allowlist of ambient names. Explicit entries
always win.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import Final, Literal, cast

__all__ = ["MINIMAL_NAMES", "build_child_env", "is_scrubbed", "scrub_environment", "scrubbed_names"]

# Substrings that mark an ambient variable name as credential-shaped (compared upper-cased).
_CREDENTIAL_WORDS: Final = ("KEY", "PASSWORD", "PASSWD", "SECRET", "TOKEN", "CREDENTIAL", "COOKIE")
# Suffixes that mark a name as credential-shaped (MYSQL_PWD, NPM_CONFIG__AUTH); PWD alone is the working directory.
_CREDENTIAL_SUFFIXES: Final = ("_PWD", "_AUTH")
# Prefix of the host's own control variables, never inherited implicitly (compared upper-cased).
_HOST_PREFIX: Final = "DSH_"

MINIMAL_NAMES: Final = frozenset({"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TMPDIR", "TZ"})
"""The ambient names ``inherit_env = "minimal"`` passes (plus every ``LC_*``)."""


# Cached by name: every spawn filters the same ambient names again, and the test is pure.
@functools.lru_cache(maxsize=4096)
def is_scrubbed(name: str) -> bool:
    """Whether the ambient scrub drops ``name``."""
    upper = name.upper()
    return (
        upper.startswith(_HOST_PREFIX)
        or upper.endswith(_CREDENTIAL_SUFFIXES)
        or any(word in upper for word in _CREDENTIAL_WORDS)
    )


def _is_minimal(name: str) -> bool:
    return name in MINIMAL_NAMES or name.startswith("LC_")


def scrub_environment(
    ambient: Mapping[str, str], *, inherit: Literal["scrubbed", "minimal"] = "scrubbed"
) -> dict[str, str]:
    """Return a copy of ``ambient`` without credential-shaped or ``DSH_*`` names (or only the minimal allowlist).

    Args:
        ambient: The host environment to filter (usually ``os.environ``).
        inherit: ``"minimal"`` keeps only ``MINIMAL_NAMES`` and ``LC_*``.
    """
    if inherit == "minimal":
        return {name: value for name, value in ambient.items() if _is_minimal(name)}
    return {name: value for name, value in ambient.items() if not is_scrubbed(name)}


def scrubbed_names(explicit: Mapping[str, str]) -> list[str]:
    """The host variables the scrub removed that ``explicit`` does not pass back, sorted (names only, never values)."""
    return sorted(name for name in os.environ if is_scrubbed(name) and name not in explicit)


def build_child_env(
    explicit: Mapping[str, str], *, inherit: Literal["scrubbed", "minimal"] = "scrubbed"
) -> dict[str, str]:
    """Build a child's environment: the filtered host environment (``os.environ``) with ``explicit`` set on top.

    Args:
        explicit: Configured entries (already ``${NAME}``-expanded); they win even for credential-shaped names.
        inherit: The entry's ``inherit_env``.
    """
    env = _scrubbed_host_environment(inherit)
    env.update(explicit)
    return env


# The host environment filtered once per `inherit`, with the encoded environment it was filtered from. Reading
# os.environ decodes every name and value in Python (about 80 us for 40 variables): once per change, not per spawn.
_filtered: dict[str, tuple[dict[bytes, bytes], dict[str, str]]] = {}


def _scrubbed_host_environment(inherit: Literal["scrubbed", "minimal"]) -> dict[str, str]:
    """``scrub_environment(os.environ)``, reused while os.environ is unchanged; always a fresh dict."""
    # CPython keeps os.environ's encoded entries in `_data`, which every os.environ write updates; comparing it to
    # the snapshot is one C-level dict comparison. Anything else (another interpreter) filters every time.
    data: object = getattr(os.environ, "_data", None)
    if type(data) is not dict:
        return scrub_environment(os.environ, inherit=inherit)
    encoded = cast("dict[bytes, bytes]", data)
    cached = _filtered.get(inherit)
    if cached is not None and cached[0] == encoded:
        return dict(cached[1])
    # Snapshot first: a write racing the filter leaves the snapshot older than the result, so the next call refilters.
    snapshot = dict(encoded)
    env = scrub_environment(os.environ, inherit=inherit)
    _filtered[inherit] = (snapshot, env)
    return dict(env)
