"""Ignores SIGTERM and stdin, prints ``armed`` once the trap is in place, and runs until SIGKILL."""

import signal
import sys
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.stdout.write("armed\n")
sys.stdout.flush()
while True:
    time.sleep(60)
