"""Forks a child that exits at once, never reaps it, and exits 0 on stdin EOF.

Where pid 1 does not reap orphans, the unreaped grandchild stays a zombie in the group after this child exits.
"""

import os
import sys

pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
sys.stdout.write("forked\n")
sys.stdout.flush()
while sys.stdin.buffer.read(65536):
    pass
