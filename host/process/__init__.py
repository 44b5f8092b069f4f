"""The managed child process shared by both providers (docs/behaviour.md#managed-child-process).

Environment scrub, spawn in a new session, exit facts, process-tree liveness and termination, the shielded
and bounded teardown ladder, an ``atexit`` hook that SIGKILLs every tree the host still owns, the keeper process
that ends every run when the host dies by any means and sweeps what a torn-down run left behind, and (for a process
that owns its lifetime, like the CLI) adoption and sweeping of descendants a child orphaned. A process that is
shutting down (``serve``) binds a ``GraceCap``, which shortens the ladder's graces once engaged.
"""

from __future__ import annotations

from host.process._env import build_child_env, scrubbed_names
from host.process._graces import GraceCap, bind_grace_cap, eof_rung, term_grace
from host.process._handle import ProcessHandle
from host.process._keeper import enrol, hold_keeper, release_keeper
from host.process._ladder import SharedTeardown, climb_teardown_ladder, run_teardown_ladder
from host.process._managed import ManagedProcess, spawn_managed
from host.process._orphans import adopt_orphans, reap_orphans
from host.process._outcome import ProcessOutcome
from host.process._stderr import tail_bytes
from host.process._tree import ProcessTree, read_proc_stat

__all__ = [
    "GraceCap",
    "ManagedProcess",
    "ProcessHandle",
    "ProcessOutcome",
    "ProcessTree",
    "SharedTeardown",
    "adopt_orphans",
    "bind_grace_cap",
    "build_child_env",
    "climb_teardown_ladder",
    "eof_rung",
    "enrol",
    "hold_keeper",
    "read_proc_stat",
    "reap_orphans",
    "release_keeper",
    "run_teardown_ladder",
    "scrubbed_names",
    "spawn_managed",
    "tail_bytes",
    "term_grace",
]
