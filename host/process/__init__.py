"""The managed child process shared by both providers (acp-provider.md §4).

Environment scrub, spawn in a new session, exit facts, process-tree liveness and termination, the shielded
and bounded teardown ladder, and an ``atexit`` hook that SIGKILLs every tree the host still owns.
"""

from __future__ import annotations

from host.process._env import build_child_env, scrub_environment
from host.process._handle import ProcessHandle
from host.process._ladder import SharedTeardown, run_teardown_ladder
from host.process._managed import ManagedProcess, spawn_managed
from host.process._outcome import ProcessOutcome

__all__ = [
    "ManagedProcess",
    "ProcessHandle",
    "ProcessOutcome",
    "SharedTeardown",
    "build_child_env",
    "run_teardown_ladder",
    "scrub_environment",
    "spawn_managed",
]
