"""Ignores stdin EOF and runs until a signal ends it (default SIGTERM disposition)."""

import time

while True:
    time.sleep(60)
