"""Signal handling from the first instant: record the first SIGINT, SIGTERM or SIGHUP instead of dying mid-import.

Imports only ``os`` and ``signal``: it runs before anything else of the command line.
"""

from __future__ import annotations

import os
import signal
from types import FrameType

__all__ = ["EXIT_BY_SIGNAL", "HANDLED_SIGNALS", "ReceivedSignals", "install", "interrupted_before_start"]

HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
EXIT_BY_SIGNAL = {signal.SIGHUP: 129, signal.SIGINT: 130, signal.SIGTERM: 143}
"""The exit status of a command ended by each signal: 128 + the signal number."""


class ReceivedSignals:
    """The first handled signal received while the recorder was installed (``None``: none yet)."""

    __slots__ = ("first",)

    def __init__(self) -> None:
        """Nothing received yet."""
        self.first: signal.Signals | None = None

    def record(self, signum: int, _frame: FrameType | None = None) -> None:
        """A signal handler: keep the first signal; a repeated one is absorbed."""
        if self.first is None:
            self.first = signal.Signals(signum)

    def reinstall(self) -> None:
        """Put the recorder back (after an event loop's own receiver restored the defaults)."""
        for signum in HANDLED_SIGNALS:
            signal.signal(signum, self.record)


def install() -> ReceivedSignals:
    """Install the recorder for SIGINT, SIGTERM and SIGHUP and return it."""
    received = ReceivedSignals()
    received.reinstall()
    return received


def interrupted_before_start(received: signal.Signals, *, as_json: bool) -> int:
    """Report a signal that arrived before any run started, and return its exit status."""
    import json

    message = f"subagent-host: interrupted by {received.name} before the run started"
    write(2, message + "\n")
    if as_json:
        write(1, json.dumps({"schema": 1, "error": message}) + "\n")
    return EXIT_BY_SIGNAL[received]


def write(fd: int, text: str) -> None:
    """Write all of ``text`` to ``fd``; a closed or broken stream is ignored."""
    data = text.encode()
    try:
        while data:
            data = data[os.write(fd, data) :]
    except OSError:
        pass  # nothing more can be said there: the exit status still tells
