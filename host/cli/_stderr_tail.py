"""The child's last stderr lines for the operator, after a failed ``run`` or ``check`` (host-only, never model-visible).

At most ``TAIL_MAX_LINES`` lines or ``TAIL_MAX_BYTES`` bytes, printed on stderr under one header line (neutralised
on a terminal, so child text cannot drive it), then, for a recorded run, the ``runs show`` hint.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from host.cli._internals import open_regular
from host.cli._output import Output, neutralise

__all__ = [
    "TAIL_HEADER",
    "TAIL_MAX_BYTES",
    "TAIL_MAX_LINES",
    "print_stderr_tail",
    "read_tail_lines",
    "runs_show_hint",
    "tail_lines",
]

TAIL_MAX_LINES: Final = 10
"""The most stderr lines a failure shows."""
TAIL_MAX_BYTES: Final = 2048
"""The most stderr bytes a failure shows."""
TAIL_HEADER: Final = "subagent-host: the child's stderr ended with:"
"""The one header line above the tail."""


def read_tail_lines(path: Path) -> list[str]:
    """``tail_lines`` of a recorded stderr file, reading only its last ``TAIL_MAX_BYTES`` (none when it is missing or
    not a regular file: a FIFO there is never waited on)."""
    try:
        with open_regular(path) as file:
            file.seek(max(0, os.fstat(file.fileno()).st_size - TAIL_MAX_BYTES))
            return tail_lines(file.read(TAIL_MAX_BYTES))
    except OSError:
        return []


def tail_lines(stderr: bytes | Sequence[str]) -> list[str]:
    """The last non-empty lines of ``stderr`` (bytes, or lines), within both bounds."""
    data = stderr if isinstance(stderr, bytes) else "\n".join(stderr).encode("utf-8", errors="replace")
    text = data[-TAIL_MAX_BYTES:].decode("utf-8", errors="replace")
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-TAIL_MAX_LINES:]


def runs_show_hint(run_id: str) -> str:
    """Where the whole tail is kept (without the ``hint: `` prefix)."""
    return f"subagent-host runs show {run_id} --stderr"


def print_stderr_tail(output: Output, lines: Sequence[str], run_id: str | None) -> None:
    """Print the header and the lines on stderr (neutralised on a terminal), then the ``runs show`` hint."""
    if not lines:
        return
    body = "\n".join(lines)
    if output.stderr_tty:
        body = neutralise(body)
    output.err(f"{TAIL_HEADER}\n{body}\n")
    if run_id is not None:
        output.err(f"hint: {runs_show_hint(run_id)}\n")
