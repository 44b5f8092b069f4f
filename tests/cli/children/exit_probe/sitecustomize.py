"""Imported at the CLI's start (``PYTHONPATH``): an ``atexit`` hook that marks a file and leaves buffered stdout."""

from __future__ import annotations

import atexit
import os
import sys


def _at_exit() -> None:
    with open(os.environ["EXIT_PROBE_MARK"], "w", encoding="utf-8") as mark:
        mark.write("atexit ran")
    sys.stdout.write("written by an atexit hook, no newline")  # still in the buffer when the hook returns


atexit.register(_at_exit)
