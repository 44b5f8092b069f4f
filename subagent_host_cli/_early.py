"""Signal handling from the first instant: record the first SIGINT, SIGTERM or SIGHUP instead of dying mid-import."""

from __future__ import annotations

import json
import os
import signal
from dataclasses import dataclass
from types import FrameType
from typing import Final

__all__ = ["EXIT_BY_SIGNAL", "HANDLED_SIGNALS", "ReceivedSignals", "install", "interrupted_before_start"]

HANDLED_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
EXIT_BY_SIGNAL: Final = {signal.SIGHUP: 129, signal.SIGINT: 130, signal.SIGTERM: 143}
"""The exit status of a command ended by each signal: 128 + the signal number."""


@dataclass(slots=True)
class ReceivedSignals:
    """The first handled signal received while the recorder was installed (``None``: none yet)."""

    first: signal.Signals | None = None

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
    message = f"subagent-host: interrupted by {received.name} before the run started"
    _write(2, message + "\n")
    if as_json:
        _write(1, json.dumps({"error": message}) + "\n")
    return EXIT_BY_SIGNAL[received]


def _write(fd: int, text: str) -> None:
    data = text.encode()
    try:
        while data:
            data = data[os.write(fd, data) :]
    except OSError:
        pass  # a closed or broken stream: nothing more can be said there
