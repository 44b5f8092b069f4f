"""Exit facts of the direct child: an exit code or the name of the signal that ended it, never both."""

from __future__ import annotations

import signal
from dataclasses import dataclass

__all__ = ["ProcessOutcome"]


@dataclass(frozen=True, slots=True)
class ProcessOutcome:
    """How the direct child ended (its descendants are not described)."""

    exit_code: int | None
    """The exit status when the child exited normally, else ``None``."""
    signal: str | None
    """The signal name (``"SIGTERM"``) when a signal ended the child, else ``None``."""

    @classmethod
    def from_returncode(cls, returncode: int) -> ProcessOutcome:
        """Translate a ``returncode`` (negative means killed by signal ``-returncode``).

        Args:
            returncode: The value of ``Popen.returncode`` after the child was reaped.
        """
        if returncode >= 0:
            return cls(exit_code=returncode, signal=None)
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            # A real-time or platform-specific signal with no Signals member.
            name = f"SIG{-returncode}"
        return cls(exit_code=None, signal=name)
