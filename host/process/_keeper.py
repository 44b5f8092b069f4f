"""The keeper: a small process that ends every process of every run once the host is gone, by whatever means.

While at least one ``Host`` is open (:func:`hold_keeper`), the first spawn starts the keeper (the stdlib script
``_keeper_script.py``, in its own session) with the read end of a pipe whose write end only this process holds.
Each spawned child gets a per-run marker in its environment, which every descendant inherits whatever group,
session or parent it ends up in, and the keeper is told the child's group. When the pipe reaches EOF (the last
``Host`` closed, or the host died, SIGKILL included) the keeper ends the tracked groups and every marked process
and exits. While the host lives, a torn-down run is retired: the keeper sweeps that run's marked leftovers
(SIGTERM, SIGKILL after the grace), at most one process-table scan per quarter second, in its own process.
"""

from __future__ import annotations

import logging
import os
import secrets
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import anyio

from host.process._tree import read_proc_stat

__all__ = ["MARK_NAME", "KeeperTicket", "enrol", "hold_keeper", "release_keeper"]

logger = logging.getLogger(__name__)

MARK_NAME: Final = "SUBAGENT_HOST_KEEPER_MARK"
"""The environment variable that marks every process of a run for the keeper."""
_SCRIPT: Final = Path(__file__).with_name("_keeper_script.py")
# The keeper's own final sweep is bounded by 1.5 s on top of the closing grace; this is the slack beyond both.
_EXIT_SLACK_S: Final = 2.5
# The closing wait for the keeper's exit is woken by its pidfd; without one it polls from 1 ms up to 15 ms (it
# usually exits within a few ms).
_POLL_S: Final = 0.001
_POLL_MAX_S: Final = 0.015


class KeeperTicket:
    """One spawned child's enrolment: the marked environment, then ``track`` after spawn and ``retire`` at release."""

    def __init__(self, keeper: _Keeper | None, run: int, env: Mapping[str, str]) -> None:
        self._keeper = keeper
        self._run = run
        self.env: dict[str, str] = dict(env)
        if keeper is not None:
            self.env[MARK_NAME] = f"{keeper.prefix}{run}"

    def track(self, pid: int) -> None:
        """Tell the keeper the child leads group ``pid``, so the group ends with the host even without markers."""
        if self._keeper is not None:
            start = _start_ticks(pid)
            if start is not None:
                self._keeper.send(f"track {self._run} {pid} {start}\n")

    def retire(self, grace_ms: float) -> None:
        """The run was torn down: the keeper ends its marked leftovers (SIGTERM, SIGKILL after ``grace_ms``)."""
        if self._keeper is not None:
            self._keeper.send(f"retire {self._run} {max(grace_ms, 0.0):.0f}\n")
            self._keeper = None


class _Keeper:
    def __init__(self) -> None:
        self.prefix = f"{secrets.token_hex(8)}."
        read_fd, self._fd = os.pipe()  # both ends non-inheritable: no child but the keeper ever holds one
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", str(_SCRIPT), self.prefix],
                stdin=read_fd,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={},
                close_fds=True,
                start_new_session=True,
            )
        except BaseException:
            os.close(self._fd)
            raise
        finally:
            os.close(read_fd)
        os.set_blocking(self._fd, False)
        self._runs = 0

    def next_run(self) -> int:
        self._runs += 1
        return self._runs

    def send(self, line: str) -> None:
        try:
            os.write(self._fd, line.encode())
        except OSError:
            # Full (the keeper is stuck) or gone: the markers still let the final sweep find the run.
            logger.debug("could not tell the keeper %r", line, exc_info=True)

    def discard(self) -> None:
        """Release a keeper that already exited (reaped by the ``poll`` that saw it)."""
        os.close(self._fd)

    async def aclose(self, grace_ms: float) -> None:
        self.send(f"quit {max(grace_ms, 0.0):.0f}\n")
        os.close(self._fd)
        with anyio.move_on_after(max(grace_ms, 0.0) / 1000 + _EXIT_SLACK_S):
            await _exited(self.process)
        if self.process.poll() is None:
            logger.warning("the keeper (pid %d) did not finish its sweep; killing it", self.process.pid)
            self.process.kill()
            self.process.wait()


async def _exited(process: subprocess.Popen[bytes]) -> None:
    """Return once ``process`` exited and was reaped: woken by its pidfd (Linux 5.3+), else polled (unbounded)."""
    try:
        pidfd: int | None = os.pidfd_open(process.pid)
    except OSError:
        pidfd = None
    try:
        interval = _POLL_S
        while process.poll() is None:
            if pidfd is not None:
                await anyio.wait_readable(pidfd)  # readable once the process terminated: poll() reaps it next
                os.close(pidfd)
                pidfd = None
            else:
                await anyio.sleep(interval)
                interval = min(interval * 2, _POLL_MAX_S)
    finally:
        if pidfd is not None:
            os.close(pidfd)


_lock = threading.Lock()
_holders = 0
_keeper: _Keeper | None = None


def hold_keeper() -> None:
    """Register an open ``Host``: children spawned from now on are enrolled with the keeper (started on demand)."""
    global _holders
    with _lock:
        _holders += 1


async def release_keeper(grace_ms: float) -> None:
    """Unregister a ``Host``; the last one closes the keeper, which first ends every marked leftover; bounded.

    Args:
        grace_ms: How long leftovers get between SIGTERM and SIGKILL in the keeper's final sweep.
    """
    global _holders, _keeper
    with _lock:
        _holders -= 1
        keeper = _keeper if _holders == 0 else None
        if keeper is not None:
            _keeper = None
    if keeper is not None:
        with anyio.CancelScope(shield=True):
            await keeper.aclose(grace_ms)


def enrol(env: Mapping[str, str]) -> KeeperTicket:
    """Enrol a child about to be spawned with ``env``; a no-op ticket unless a ``Host`` is open (Linux only)."""
    global _keeper
    if not sys.platform.startswith("linux"):
        return KeeperTicket(None, 0, env)
    with _lock:
        if _holders == 0:
            return KeeperTicket(None, 0, env)
        if _keeper is not None and _keeper.process.poll() is not None:
            logger.warning("the keeper (pid %d) died; starting another", _keeper.process.pid)
            _keeper.discard()
            _keeper = None
        if _keeper is None:
            try:
                _keeper = _Keeper()
            except OSError:
                logger.warning("could not start the keeper; a host that dies will leave its runs behind", exc_info=True)
                return KeeperTicket(None, 0, env)
        return KeeperTicket(_keeper, _keeper.next_run(), env)


def _start_ticks(pid: int) -> int | None:
    data = read_proc_stat(pid)
    if data is None:
        return None
    fields = data[data.rfind(b")") + 2 :].split()
    return int(fields[19]) if len(fields) > 19 else None
