"""A run's files crossing from a Ray worker's node into the batch directory, bounded.

A worker's host records into a state directory on its node, so each run leaves there what it leaves in
``OUTDIR/runs/`` locally: ``<run_id>.jsonl`` (the transcript), ``<run_id>.stderr`` (the child's stderr tail), and for a
worktree run ``<run_id>.patch`` and ``<run_id>.changes.json``. After the item the worker lists them
(``collect_run_files``): a file of at most ``INLINE_FILE_BYTES`` travels inside the outcome and is removed from the
node at once; a larger one stays on the node and the driver streams it in ``CHUNK_BYTES`` pieces (``read_chunk``),
then has it removed (``remove_run_files``). So the driver holds at most one chunk of a large file at a time, however
large a patch is. The driver writes every file under ``OUTDIR/runs/`` with the name the node gave it (0600, through
a temporary file and a rename, so a reader never sees half a patch); a name that is not a run file's is refused.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from host._files import NotRegularFileError, create_temporary, open_regular
from host.records import resolve_state_dir

__all__ = [
    "CHUNK_BYTES",
    "INLINE_FILE_BYTES",
    "RunFile",
    "collect_run_files",
    "read_chunk",
    "remove_run_files",
    "store_run_files",
    "worker_state_dir",
]

INLINE_FILE_BYTES: Final = 1 << 20
"""A run file up to this size travels inside the item's outcome; a larger one is streamed in chunks."""
CHUNK_BYTES: Final = 4 << 20
"""The size of each piece of a streamed run file (what the driver holds of it at once)."""
RUN_FILE_SUFFIXES: Final = (".jsonl", ".stderr", ".patch", ".changes.json")
_RUN_FILE: Final = re.compile(r"[A-Za-z0-9_-]{1,128}(?:\.jsonl|\.stderr|\.patch|\.changes\.json)")
"""A run file's name: a host-minted run id (no slash, no dot) and one of the suffixes above."""
WORKER_STATE_SUBDIR: Final = "batch-workers"
"""Under the node's state directory: where the Ray workers' hosts record their runs and make their worktrees."""


def worker_state_dir() -> Path:
    """The state directory of the hosts of Ray workers on this node: ``<state dir>/batch-workers`` (the node's
    ``$SUBAGENT_HOST_STATE_DIR`` or user state directory). One per node, shared by every worker, so a later worker
    reclaims the worktree of a killed one; a run's files leave it once the driver has them."""
    return resolve_state_dir() / WORKER_STATE_SUBDIR


_DIR_MODE: Final = 0o700


@dataclass(frozen=True, slots=True)
class RunFile:
    """One file of a run, as the worker found it on its node."""

    name: str
    """``<run_id><suffix>``."""
    size: int
    data: bytes | None
    """The whole file, or ``None`` when it is streamed (it stays on the node until the driver removes it)."""


def is_run_file_name(name: str) -> bool:
    """``name`` is a run file's name (so it cannot name a file outside a runs directory)."""
    return _RUN_FILE.fullmatch(name) is not None


def collect_run_files(runs_dir: Path, run_ids: Iterable[str]) -> tuple[RunFile, ...]:
    """On the node: every file ``run_ids`` left in ``runs_dir``; the small ones read and removed."""
    found: list[RunFile] = []
    for run_id in run_ids:
        for suffix in RUN_FILE_SUFFIXES:
            name = run_id + suffix
            if not is_run_file_name(name):
                continue
            path = runs_dir / name
            try:
                with open_regular(path) as file:
                    data = file.read(INLINE_FILE_BYTES + 1)
                    size = os.fstat(file.fileno()).st_size
            except (FileNotFoundError, NotRegularFileError):  # the host writes only regular files there
                continue
            if len(data) > INLINE_FILE_BYTES:
                found.append(RunFile(name, size, None))
            else:
                found.append(RunFile(name, len(data), data))
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
    return tuple(found)


def read_chunk(runs_dir: Path, name: str, offset: int) -> bytes:
    """On the node: up to ``CHUNK_BYTES`` of a streamed run file from ``offset`` (empty at its end).

    Raises:
        ValueError: ``name`` is not a run file's name.
        OSError: the file cannot be read, or it is not a regular file (``NotRegularFileError``).
    """
    if not is_run_file_name(name):
        raise ValueError(f"not a run file: {name!r}")
    with open_regular(runs_dir / name) as file:
        file.seek(offset)
        return file.read(CHUNK_BYTES)


def remove_run_files(runs_dir: Path, names: Iterable[str]) -> None:
    """On the node: remove streamed run files once the driver has them (missing ones are fine)."""
    for name in names:
        if is_run_file_name(name):
            with contextlib.suppress(FileNotFoundError):
                (runs_dir / name).unlink()


def store_run_files(runs_dir: Path, files: Iterable[RunFile], fetch: Callable[[str, int], bytes]) -> None:
    """On the driver: write each file into ``runs_dir`` (0600, temporary file + rename); ``fetch(name, offset)``
    returns the next chunk of a streamed one (empty at its end).

    Raises:
        ValueError: a file's name is not a run file's name (nothing of it is written).
        OSError: a file could not be written.
    """
    if not runs_dir.is_dir():
        runs_dir.mkdir(mode=_DIR_MODE, parents=True, exist_ok=True)
    for run_file in files:
        if not is_run_file_name(run_file.name):
            raise ValueError(f"not a run file: {run_file.name!r}")
        target = runs_dir / run_file.name
        fd, temporary = create_temporary(runs_dir, run_file.name)
        try:
            if run_file.data is not None:
                _write_all(fd, run_file.data)
            else:
                offset = 0
                while chunk := fetch(run_file.name, offset):
                    _write_all(fd, chunk)
                    offset += len(chunk)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temporary)
            raise
        os.close(fd)
        os.replace(temporary, target)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
