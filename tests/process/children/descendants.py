"""Starts three kinds of descendant, prints their pids on one stdout line, then exits 0 on stdin EOF.

``setsid`` is a grandchild in its own session; ``middle`` a grandchild in the group that starts ``deep``, a
great-grandchild in its own session (a double fork whose links are all still alive); ``threaded`` a grandchild
started from a second thread (the kernel lists it under that thread). All sleep until signalled, on /dev/null.
"""

import subprocess
import sys
import threading

SLEEPER = "import time; time.sleep(120)"
MIDDLE = f"""
import subprocess, sys
deep = subprocess.Popen([sys.executable, "-c", {SLEEPER!r}], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                        start_new_session=True)
sys.stdout.write(f"{{deep.pid}}\\n")
sys.stdout.flush()
deep.wait()
"""


def sleeper(*, start_new_session: bool = False) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-c", SLEEPER]
    return subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=start_new_session
    )


escapee = sleeper(start_new_session=True)
middle = subprocess.Popen([sys.executable, "-c", MIDDLE], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
assert middle.stdout is not None
deep_pid = int(middle.stdout.readline())
started: list[subprocess.Popen[bytes]] = []
ready = threading.Event()
release = threading.Event()


def from_a_thread() -> None:
    started.append(sleeper())
    ready.set()
    release.wait()


thread = threading.Thread(target=from_a_thread)
thread.start()
ready.wait()
sys.stdout.write(f"setsid={escapee.pid} middle={middle.pid} deep={deep_pid} threaded={started[0].pid}\n")
sys.stdout.flush()
while sys.stdin.buffer.read(65536):
    pass
release.set()
thread.join()
