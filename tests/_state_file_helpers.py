"""Files that are not what the host wrote, put where it keeps its state: a FIFO, a symlink to ``/dev/zero``.

``fifo_at`` makes a FIFO and, from a thread, opens its write end once ``release_after_s`` passed (and once more
when the block ends): a reader that blocked in ``open()`` (the defect these tests pin) is let go then, so a test
fails on its ``fail_after`` bound instead of hanging the suite. ``memory_bounded`` caps a child's address space, so
a reader that reads ``/dev/zero`` without bound fails (``MemoryError``) instead of filling the machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import uuid
from collections.abc import Generator
from pathlib import Path
from typing import Any, Final

DEV_ZERO: Final = Path("/dev/zero")
CHILD_ADDRESS_SPACE_BYTES: Final = 2 * 1024**3
"""The address space ``memory_bounded`` allows a console script (it needs some hundred MiB)."""
_RELEASE_POLL_S: Final = 0.1


@contextlib.contextmanager
def fifo_at(path: Path, *, release_after_s: float) -> Generator[Path]:
    """A FIFO at ``path`` for the block; a reader blocked on it is released after ``release_after_s``."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.mkfifo(path, 0o600)
    done = threading.Event()

    def release() -> None:
        done.wait(release_after_s)
        while True:
            with contextlib.suppress(OSError):  # ENXIO: no reader has it open now
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
            if done.wait(_RELEASE_POLL_S):
                return

    thread = threading.Thread(target=release, name="fifo-release", daemon=True)
    thread.start()
    try:
        yield path
    finally:
        done.set()
        thread.join(timeout=5)


def symlink_to_dev_zero(path: Path) -> Path:
    """A symlink at ``path`` to ``/dev/zero`` (endless bytes)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.symlink_to(DEV_ZERO)
    return path


def memory_bounded(*argv: str) -> list[str]:
    """``argv`` run with its address space capped at ``CHILD_ADDRESS_SPACE_BYTES`` (bash's ``ulimit -v``)."""
    return ["bash", "-c", f'ulimit -v {CHILD_ADDRESS_SPACE_BYTES // 1024} && exec "$@"', "bash", *argv]


def write_finished_run(state: Path) -> str:
    """A finished run's transcript under ``state/runs`` as the writer leaves it (``run/start``, ``prompt``,
    ``run/end``); its run id."""
    run_id = str(uuid.uuid4())
    runs = state / "runs"
    runs.mkdir(mode=0o700, parents=True, exist_ok=True)
    lines: list[dict[str, Any]] = [
        {"seq": 0, "type": "run/start", "time": "2026-12-05T05:00:00.000Z", "data": {"provider": "fake"}},
        {"seq": 1, "type": "prompt", "time": "2026-12-05T05:00:00.001Z", "data": {"content": []}},
        {"seq": 2, "type": "run/end", "time": "2026-12-05T05:00:01.000Z", "data": {"stop_reason": "completed"}},
    ]
    (runs / f"{run_id}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return run_id


def sparse_file(path: Path, head: bytes, size: int = 8 * 1024**3) -> Path:
    """A regular file of ``size`` bytes (a hole on disk: nothing is written) starting with ``head``, then NULs with
    no newline: a huge file named like a state file."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(path, "wb") as file:
        file.write(head)
        file.truncate(size)
    return path
