"""Plants one SIGTERM-deaf escapee, writes its pid to ``ESCAPEE_PID_FILE``, then execs ``argv[1:]`` under Python.

``ESCAPEE_MODE``: ``group`` (a plain child, in our group), ``setsid`` (a child in a session of its own) or
``doublefork`` (fork, ``setsid()``, fork again, the middle process exits: a daemon whose parent is already gone).
The escapee's stdio is ``/dev/null``; it runs until SIGKILL.
"""

import os
import signal
import sys
import time


def become_escapee(pid_file: str) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    temporary = f"{pid_file}.tmp"
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(str(os.getpid()))
    os.replace(temporary, pid_file)
    while True:
        time.sleep(60)


def plant(mode: str, pid_file: str) -> None:
    pid = os.fork()
    if pid == 0:
        if mode in ("setsid", "doublefork"):
            os.setsid()
        if mode == "doublefork" and os.fork() != 0:
            os._exit(0)
        become_escapee(pid_file)
        os._exit(0)
    if mode == "doublefork":
        os.waitpid(pid, 0)


plant(os.environ["ESCAPEE_MODE"], os.environ["ESCAPEE_PID_FILE"])
os.execv(sys.executable, [sys.executable, *sys.argv[1:]])
