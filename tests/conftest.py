"""Suite-wide fixtures: the anyio backend, and the leak check that fails any test leaving a child or a pipe behind.

Every child a test spawns inherits ``SUBAGENT_HOST_TEST_MARKER`` (the ambient env scrub keeps it: it is not
credential-shaped), so the leak check finds even grandchildren that ``setsid()`` out of the group and were
re-parented away from the test process.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

MARKER_NAME = "SUBAGENT_HOST_TEST_MARKER"
os.environ[MARKER_NAME] = uuid.uuid4().hex
# Only processes created after the suite started can carry this run's marker; checking creation time first keeps
# the per-test scan cheap (reading every process's environment is the slow part).
_SUITE_STARTED = psutil.Process().create_time() - 1.0

REPO_ROOT = Path(__file__).resolve().parent.parent
FAKE_ACP_AGENT = REPO_ROOT / "fake_runtimes" / "acp_agent.py"
FAKE_DSH_RUNTIME = REPO_ROOT / "fake_runtimes" / "dsh_runtime.py"
# The built-in echo agent ships inside the package (fake_runtimes/ is test-only and never installed).
ECHO_AGENT = REPO_ROOT / "host" / "_echo_agent.py"
PYTHON = sys.executable

# How long a leaked process may take to finish dying after the test returned (teardown ladders may still be
# reaping a SIGKILLed child at that instant).
_LEAK_SETTLE_SECONDS = 3.0


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session", autouse=True)
def private_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every CLI the suite starts records its runs into a temporary state dir, never the user's own."""
    previous = os.environ.get("SUBAGENT_HOST_STATE_DIR")
    os.environ["SUBAGENT_HOST_STATE_DIR"] = str(tmp_path_factory.mktemp("subagent-host-state"))
    yield
    if previous is None:
        del os.environ["SUBAGENT_HOST_STATE_DIR"]
    else:
        os.environ["SUBAGENT_HOST_STATE_DIR"] = previous


def _marked_processes() -> list[psutil.Process]:
    marker = os.environ[MARKER_NAME]
    me = os.getpid()
    found: list[psutil.Process] = []
    for proc in psutil.process_iter(["pid", "create_time"]):
        if proc.pid == me or (proc.info.get("create_time") or 0.0) < _SUITE_STARTED:
            continue
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
            if proc.environ().get(MARKER_NAME) == marker:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def _open_pipes() -> set[str]:
    pipes: set[str] = set()
    fd_dir = Path("/proc/self/fd")
    for entry in fd_dir.iterdir():
        try:
            target = os.readlink(entry)
        except OSError:
            continue
        if target.startswith("pipe:"):
            pipes.add(f"{entry.name}->{target}")
    return pipes


@pytest.fixture(autouse=True)
def no_leaked_processes_or_pipes() -> Iterator[None]:
    """Fail the test if it leaves a marked process alive or a new pipe open; kill what it leaked."""
    pipes_before = _open_pipes()
    yield
    deadline = time.monotonic() + _LEAK_SETTLE_SECONDS
    leaked = _marked_processes()
    while leaked and time.monotonic() < deadline:
        time.sleep(0.02)
        leaked = _marked_processes()
    for proc in leaked:
        try:
            proc.send_signal(signal.SIGKILL)
        except psutil.Error:
            pass
    new_pipes = _open_pipes() - pipes_before
    if new_pipes:
        # Only garbage can still hold them now: collect it and look again (a full collection on every test would
        # cost a tenth of a second of CPU each, over a heap of every test module).
        gc.collect()
        new_pipes = _open_pipes() - pipes_before
    problems: list[str] = []
    if leaked:
        problems.append(f"test left child processes alive: {[p.pid for p in leaked]}")
    if new_pipes:
        problems.append(f"test left pipes open: {sorted(new_pipes)}")
    if problems:
        pytest.fail("; ".join(problems))
