"""The keeper: a stdlib-only process that ends a host's runs when the host is gone (run by path, never imported).

Started by :mod:`host.process._keeper` with the read end of a pipe as stdin and the marker prefix as ``argv[1]``.
Every child the host spawns carries ``SUBAGENT_HOST_KEEPER_MARK=<prefix><run>`` in its environment, which its
descendants inherit whatever group, session or parent they end up in. Lines on stdin:

- ``track <run> <pgid> <start>``: the run's child leads group ``pgid`` (``start``: its start time in clock ticks);
- ``retire <run> <grace_ms>``: the run was torn down; its marked leftovers get SIGTERM, then SIGKILL after the grace;
- ``quit <grace_ms>``: the host is closing; on the following EOF everything marked gets that grace.

On EOF (the host closed the pipe, or died by any means, SIGKILL included) every tracked group and every marked
process is ended, then the keeper exits. SIGINT and SIGHUP are ignored; SIGTERM counts as EOF.
"""

import os
import select
import signal
import sys
import time

MARK_NAME = b"SUBAGENT_HOST_KEEPER_MARK="
# How often leftovers of retired runs are looked for while the host lives (one /proc scan per interval at most).
SWEEP_INTERVAL_S = 0.25
# How long the final sweep keeps looking for marked processes (forks racing the kills) before giving up.
FINAL_SWEEP_S = 1.5
POLL_S = 0.02


class Keeper:
    def __init__(self, prefix: bytes) -> None:
        self.prefix = MARK_NAME + prefix
        self.own_start = start_ticks(os.getpid()) or 0
        self.groups: dict[bytes, tuple[int, int]] = {}
        # run -> [grace_s, SIGTERM sent at (0.0 before the first sweep), the run's child start in ticks]
        self.retired: dict[bytes, list[float]] = {}
        self.quit_grace_s = 0.0
        self.last_sweep = 0.0
        self.pending = b""

    def serve(self) -> None:
        try:
            self.listen()
        except Stop:
            pass
        self.final_sweep()

    def listen(self) -> None:
        while True:
            timeout = SWEEP_INTERVAL_S if self.retired else None
            try:
                readable, _, _ = select.select([0], [], [], timeout)
            except InterruptedError:
                continue
            if readable and not self.read():
                break
            now = time.monotonic()
            if self.retired and now - self.last_sweep >= SWEEP_INTERVAL_S:
                self.last_sweep = now
                self.sweep_retired(now)

    def read(self) -> bool:
        try:
            data = os.read(0, 65536)
        except InterruptedError:
            return True
        except OSError:
            data = b""
        if not data:
            return False
        *lines, self.pending = (self.pending + data).split(b"\n")
        for line in lines:
            self.handle(line.split())
        return True

    def handle(self, words: list[bytes]) -> None:
        try:
            if words[0] == b"track":
                self.groups[words[1]] = (int(words[2]), int(words[3]))
            elif words[0] == b"retire":
                _, start = self.groups.pop(words[1], (0, self.own_start))
                self.retired[words[1]] = [float(words[2]) / 1000, 0.0, float(start)]
            elif words[0] == b"quit":
                self.quit_grace_s = float(words[1]) / 1000
        except (IndexError, ValueError):
            pass

    def sweep_retired(self, now: float) -> None:
        marks = {self.prefix + run: run for run in self.retired}
        found: dict[bytes, list[int]] = {}
        # A run's descendants started after its child: only newer processes need their environment read.
        since = int(min(state[2] for state in self.retired.values()))
        for pid, mark in marked_processes(since):
            run = marks.get(mark)
            if run is not None:
                found.setdefault(run, []).append(pid)
        for run, state in list(self.retired.items()):
            pids = found.get(run, [])
            if not pids:
                del self.retired[run]
                continue
            grace_s, termed_at, _ = state
            if termed_at == 0.0:
                state[1] = now
                signal_all(pids, signal.SIGTERM)
            elif now - termed_at >= grace_s:
                signal_all(pids, signal.SIGKILL)

    def final_sweep(self) -> None:
        first = signal.SIGTERM if self.quit_grace_s > 0 else signal.SIGKILL
        # Two scans in a row that find nothing alive end it: a process forked by a marked parent that exited during
        # the first scan (listed neither as itself nor as its parent) is in the second's listing.
        if not self.signal_everything(first) and not self.signal_everything(first):
            return
        if self.quit_grace_s > 0:
            deadline = time.monotonic() + self.quit_grace_s
            while time.monotonic() < deadline and self.anything_left():
                time.sleep(POLL_S)
        deadline = time.monotonic() + FINAL_SWEEP_S
        while self.signal_everything(signal.SIGKILL) and time.monotonic() < deadline:
            time.sleep(POLL_S)

    def signal_everything(self, sig: int) -> bool:
        """Signal every tracked group and marked process; whether anything was found."""
        found = False
        for pgid, start in self.groups.values():
            leader_start = start_ticks(pgid)
            if leader_start is not None and leader_start != start:
                continue  # the pid now belongs to another process: not our group any more
            try:
                os.killpg(pgid, sig)
                found = found or group_has_live_member(pgid)
            except OSError:
                pass
        pids = [pid for pid, mark in marked_processes(self.own_start) if mark.startswith(self.prefix)]
        signal_all(pids, sig)
        return found or bool(pids)

    def anything_left(self) -> bool:
        if any(group_has_live_member(pgid) for pgid, _ in self.groups.values()):
            return True
        return any(mark.startswith(self.prefix) for _, mark in marked_processes(self.own_start))


class Stop(Exception):
    """Raised by the SIGTERM handler: sweep as on EOF, then exit."""


def on_sigterm(signum: int, frame: object) -> None:
    raise Stop


def read_stat(pid: int) -> list[bytes] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            data = stat.read()
    except OSError:
        return None
    # Fields after the parenthesised command (which may itself hold spaces or parentheses).
    return data[data.rfind(b")") + 2 :].split()


def start_ticks(pid: int) -> int | None:
    fields = read_stat(pid)
    return int(fields[19]) if fields is not None and len(fields) > 19 else None


def group_has_live_member(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except OSError:
        return False
    for name in os.listdir("/proc"):
        if name.isdigit():
            fields = read_stat(int(name))
            if fields is not None and len(fields) > 2 and int(fields[2]) == pgid and fields[0] != b"Z":
                return True
    return False


def marked_processes(since_ticks: int) -> list[tuple[int, bytes]]:
    """(pid, marker entry) of every live process started at or after ``since_ticks`` that carries a marker."""
    me = os.getpid()
    found: list[tuple[int, bytes]] = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        fields = read_stat(int(name))
        if fields is None or len(fields) < 20 or fields[0] in (b"Z", b"X") or int(fields[19]) < since_ticks:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as environ:
                entries = environ.read().split(b"\0")
        except OSError:
            continue
        for entry in entries:
            if entry.startswith(MARK_NAME):
                found.append((int(name), entry))
                break
    return found


def signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, on_sigterm)
    Keeper(os.fsencode(sys.argv[1])).serve()


if __name__ == "__main__":
    main()
    os._exit(0)  # swept: skip interpreter teardown, the host waits for this exit
