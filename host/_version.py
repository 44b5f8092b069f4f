"""The installed package's version, looked up once per process (a metadata lookup scans the installed distributions)."""

from __future__ import annotations

import functools
import importlib.metadata

__all__ = ["package_version"]


@functools.cache
def package_version() -> str:
    """This package's installed version; ``unknown`` when it is not installed (a bare checkout on ``sys.path``)."""
    try:
        return importlib.metadata.version("subagent-host")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
