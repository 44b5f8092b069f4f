"""The session's one local Ray cluster (``ray.init(num_cpus=2, include_dashboard=False)``), shared by every Ray test
of this directory: started at the first test that asks for it, shut down at the end of the session.

It is started without the suite's process marker (its own processes are not the tests' children); the fake agent's
entries carry the marker in their ``env``, so the leak check still sees every child and grandchild. Its workers
inherit the suite's private ``SUBAGENT_HOST_STATE_DIR``, so their worker state directory is the suite's too.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import MARKER_NAME


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[str]:
    """One local cluster for the session; yields its address (for a CLI run to connect to)."""
    ray: Any = importlib.import_module("ray")
    marker = os.environ.pop(MARKER_NAME)
    try:
        context = ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    finally:
        os.environ[MARKER_NAME] = marker
    try:
        yield str(context.address_info["address"])
    finally:
        ray.shutdown()
