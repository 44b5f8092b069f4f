"""A record's ``host_version`` is the installed package's version, exactly as the package metadata gives it."""

from __future__ import annotations

import importlib.metadata

from host.records._recording import host_version


def test_host_version_equals_the_version_the_package_metadata_parses_to() -> None:
    assert host_version() == importlib.metadata.version("subagent-host")
