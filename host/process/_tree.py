"""The managed process tree: the leader's process group plus a psutil snapshot of its descendants.

The snapshot covers descendants that ``setsid()``-ed out of the group; psutil guards against pid reuse when a
member is signalled later. On Linux the descendants are found by walking ``/proc/<pid>/task/*/children`` down
from the leader, which costs a few reads per descendant; elsewhere psutil's scan of the whole process table does
it. Both see the same processes: a descendant stays its parent's child (in or out of the group) until that
parent dies, and then it is re-parented away from the tree, where neither finds it. Every call here is
synchronous and non-blocking (no psutil waits). psutil itself is imported only by the first call that needs it
(a descendant found, a reaped leader whose group still answers, or a platform without the ``/proc`` walk): a run
whose child leaves no descendant never loads it.
"""

from __future__ import annotations

import errno
import logging
import os
import signal
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import psutil

__all__ = ["ProcessTree", "descendant_pids", "member_alive", "read_proc_stat", "signal_members"]

logger = logging.getLogger(__name__)

# Whether this kernel lists each thread's children under /proc (Linux with CONFIG_PROC_CHILDREN).
_PROC_CHILDREN: Final = os.path.exists(f"/proc/self/task/{os.getpid()}/children")


def descendant_pids(pid: int) -> list[int] | None:
    """The pids of ``pid``'s descendants, parents before children, from ``/proc``; ``None`` off Linux.

    A process that exits during the walk simply contributes no children; the list may name a pid that is gone by
    the time the caller looks at it.
    """
    if not _PROC_CHILDREN:
        return None
    found: list[int] = []
    pending = [pid]
    while pending:
        parent = pending.pop()
        task_dir = f"/proc/{parent}/task"
        try:
            threads = os.listdir(task_dir)
        except OSError:
            continue
        # A child is listed under the thread that forked it, so every thread's list is read.
        for thread in threads:
            try:
                with open(f"{task_dir}/{thread}/children", "rb") as listing:
                    children = listing.read().split()
            except OSError:
                continue
            for child in children:
                child_pid = int(child)
                found.append(child_pid)
                pending.append(child_pid)
    return found


def read_proc_stat(pid: int) -> bytes | None:
    """``/proc/<pid>/stat`` (one short line), or ``None`` when it cannot be read (gone, or no ``/proc``). One
    ``os.open`` and one ``os.read``: a buffered file object costs several syscalls and a Python I/O stack, and this
    is read on every warm session turn."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, 4096)  # the whole line: a 16-byte comm bounds it far below this
    except OSError:
        return None
    finally:
        os.close(fd)


def member_alive(member: psutil.Process) -> bool:
    """Whether ``member`` still runs (a zombie does not; an inaccessible process might)."""
    import psutil

    try:
        return member.is_running() and member.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True


def _group_has_live_member(pgid: int) -> bool:
    """Whether the group holds a process that is not a zombie (only asked once the leader was reaped)."""
    import psutil

    for pid in psutil.pids():
        try:
            if os.getpgid(pid) != pgid:
                continue
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                return True
        except (ProcessLookupError, psutil.NoSuchProcess):
            continue
        except (PermissionError, psutil.AccessDenied):
            return True
    return False


def signal_members(members: Iterable[psutil.Process], sig: signal.Signals) -> None:
    """Send ``sig`` to each member still running (psutil guards against reused pids); vanished ones are skipped."""
    import psutil

    for member in members:
        try:
            if member.is_running():
                member.send_signal(sig)
        except psutil.NoSuchProcess:
            continue
        except psutil.AccessDenied:
            logger.debug("not permitted to signal process %d", member.pid)


class ProcessTree:
    """The group ``pgid`` (the leader's pid) plus every snapshot member, for liveness checks and signals."""

    def __init__(self, pgid: int) -> None:
        self.pgid = pgid
        self._members: dict[int, psutil.Process] = {}
        # Only psutil's scan (off Linux) needs a handle on the leader; the /proc walk needs just its pid, which
        # cannot be reused while the leader is unreaped (the only time a snapshot is taken). Building the handle
        # reads /proc/<pid>/stat, so a Linux run skips it.
        self._leader: psutil.Process | None = None
        if not _PROC_CHILDREN:
            import psutil

            try:
                self._leader = psutil.Process(pgid)
            except psutil.Error:
                pass

    def snapshot(self) -> None:
        """Add the leader's current descendants to the tree; call only while the leader is unreaped."""
        pids = descendant_pids(self.pgid)
        if pids == []:
            return
        import psutil

        if pids is None:
            if self._leader is None:
                return
            try:
                children = self._leader.children(recursive=True)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                return
            for child in children:
                self._members.setdefault(child.pid, child)
            return
        for pid in pids:
            known = self._members.get(pid)
            if known is not None and known.is_running():
                continue
            # New, or a member that died and whose pid a new descendant now holds: track the live process.
            try:
                # psutil records the start time here, which is what guards a later signal against pid reuse.
                self._members[pid] = psutil.Process(pid)
            except psutil.Error:
                continue

    def alive(self, *, leader_reaped: bool) -> bool:
        """Whether any process of the tree may still run.

        Args:
            leader_reaped: The leader's exit was observed; from then on a group of only zombies counts as gone.
        """
        if self._group_alive() and (not leader_reaped or _group_has_live_member(self.pgid)):
            return True
        return any(member_alive(member) for member in self._members.values())

    def _group_alive(self) -> bool:
        try:
            os.killpg(self.pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            # EPERM: some member exists that we may not signal; only ESRCH proves absence.
            return True
        except OSError as exc:
            return exc.errno != errno.ESRCH
        return True

    def send(self, sig: signal.Signals) -> None:
        """Send ``sig`` to the group and to each live snapshot member; vanished targets are ignored."""
        try:
            os.killpg(self.pgid, sig)
        except ProcessLookupError:
            pass
        except PermissionError:
            logger.debug("not permitted to signal process group %d", self.pgid)
        signal_members(self._members.values(), sig)

    def kill_now(self) -> None:
        """SIGKILL the tree synchronously, ignoring every error (used by ``atexit`` and emergency paths)."""
        try:
            self.send(signal.SIGKILL)
        except Exception:  # containment: the last-resort kill must never raise (atexit, cancelled cleanup)
            logger.debug("SIGKILL of process group %d failed", self.pgid, exc_info=True)
