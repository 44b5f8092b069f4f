"""Orphaned descendants: adopt them as a child subreaper, and end every one of them before the process exits.

A descendant that ``setsid()``-s away and whose parent exits before teardown's psutil snapshot is in neither the
child's group nor the snapshot. A process that owns its lifetime (the CLI) can become the Linux child subreaper,
so such orphans re-parent to it, and then sweep its remaining children: SIGTERM, SIGKILL after the grace, reap.
Everything is bounded and shielded; elsewhere ``adopt_orphans`` is a no-op. On Linux the sweep first lists the
descendants from ``/proc``; psutil is imported only when there is one.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
from typing import TYPE_CHECKING, Final

import anyio

from host.process._managed import poll_until
from host.process._tree import descendant_pids, member_alive, signal_members

if TYPE_CHECKING:
    import psutil

__all__ = ["adopt_orphans", "reap_orphans"]

logger = logging.getLogger(__name__)

# prctl(2) option that makes orphaned descendants re-parent to the caller instead of to init.
_PR_SET_CHILD_SUBREAPER: Final = 36


def adopt_orphans() -> bool:
    """Make this process the child subreaper of its descendants (Linux only; call it before spawning).

    Only for a process that owns its lifetime: adopted orphans must be swept with :func:`reap_orphans`.

    Returns:
        Whether orphaned descendants now re-parent to this process.
    """
    if not sys.platform.startswith("linux"):
        return False
    try:
        # The process's own symbols, libc among them: find_library("c") would spawn ldconfig for the same answer.
        libc = ctypes.CDLL(None, use_errno=True)
        adopted = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        adopted = False
    if not adopted:
        logger.debug("could not become the child subreaper; orphaned descendants re-parent to init")
    return adopted


async def reap_orphans(grace_ms: float) -> None:
    """End every remaining descendant of this process: SIGTERM, SIGKILL after ``grace_ms``, reap; bounded.

    Call it once every managed child was torn down: what is left was orphaned (adopted by :func:`adopt_orphans`)
    or survived its ladder.
    """
    with anyio.CancelScope(shield=True):
        orphans = _descendants()
        if not orphans:
            return
        logger.warning("terminating %d process(es) a child left behind", len(orphans))
        signal_members(orphans, signal.SIGTERM)
        if await _wait_gone(orphans, grace_ms):
            return
        # Anything forked during the grace is a descendant too.
        orphans = _descendants()
        signal_members(orphans, signal.SIGKILL)
        if not await _wait_gone(orphans, grace_ms):
            logger.warning("processes a child left behind survived SIGKILL: %s", [proc.pid for proc in orphans])


def _descendants() -> list[psutil.Process]:
    pids = descendant_pids(os.getpid())
    if pids == []:
        return []  # none (the common end of a run): no psutil needed
    import psutil

    if pids is None:  # no /proc walk here: psutil scans the process table
        try:
            return psutil.Process().children(recursive=True)
        except psutil.Error:
            return []
    found: list[psutil.Process] = []
    for pid in pids:
        try:
            found.append(psutil.Process(pid))  # records the start time: a later signal cannot hit a reused pid
        except psutil.Error:
            continue  # gone since the walk
    return found


def _gone(proc: psutil.Process) -> bool:
    """Whether ``proc`` has exited; reaps it first when it is our own (adopted) zombie."""
    try:
        os.waitpid(proc.pid, os.WNOHANG)
    except ChildProcessError:
        pass  # not (or no longer) our child
    return not member_alive(proc)


async def _wait_gone(processes: list[psutil.Process], grace_ms: float) -> bool:
    # Polled: no event fires when a process that is not our child (or not yet) dies.
    with anyio.move_on_after(max(grace_ms, 0.0) / 1000):
        await poll_until(lambda: all(_gone(proc) for proc in processes))
    return all(_gone(proc) for proc in processes)
