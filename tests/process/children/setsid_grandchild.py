"""Starts a grandchild in its own session that ignores SIGTERM, then exits 0 on stdin EOF.

The grandchild inherits stdout and prints ``grandchild <pid> armed`` once its SIGTERM trap is in place, so the
host's stdout stays open after this child exits.
"""

import os
import subprocess
import sys

GRANDCHILD = """
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.stdout.write(f"grandchild {os.getpid()} armed\\n")
sys.stdout.flush()
while True:
    time.sleep(60)
"""

subprocess.Popen([sys.executable, "-c", GRANDCHILD], stdin=subprocess.DEVNULL, start_new_session=True)
while sys.stdin.buffer.read(65536):
    pass
# The grandchild is deliberately left running; skip Popen's "still running" warning at interpreter exit.
sys.stdout.flush()
os._exit(0)
