"""The host's writes under its state directory never open what something else put there: a temporary file is a new
private file with a random name (``O_EXCL | O_NOFOLLOW``), so a symlink or FIFO planted at the name a writer once
used (``<run_id>.changes.json.tmp``, ``.summary.json.<pid>.tmp``, ``.<run file>.<pid>.tmp``) is never followed,
truncated or waited on; and a patch is never written through a symlink or into a FIFO at ``<run_id>.patch``. Each
file is still written whole and 0600."""

from __future__ import annotations

import errno
import json
import os
import stat
import uuid
from pathlib import Path

import pytest

from host.batch._run_files import RunFile, store_run_files
from host.batch._summary import write_summary
from host.workspace._changes import Changes
from host.workspace._store import changes_path, open_patch_file, read_changes_file, write_changes_file

_VICTIM_TEXT = "the operator's file\n"


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim.txt"
    victim.write_text(_VICTIM_TEXT)
    return victim


def _private(path: Path) -> bool:
    facts = path.lstat()
    return stat.S_ISREG(facts.st_mode) and stat.S_IMODE(facts.st_mode) == 0o600


def test_a_changes_file_is_written_beside_a_symlink_planted_at_its_old_temporary_name(tmp_path: Path) -> None:
    runs, victim, run_id = tmp_path / "runs", _victim(tmp_path), str(uuid.uuid4())
    runs.mkdir(mode=0o700)
    planted = runs / f"{run_id}.changes.json.tmp"
    planted.symlink_to(victim)
    changes = Changes(branch="subagent-host/x", base="0" * 40, files=[], insertions=0, deletions=0)
    write_changes_file(runs, run_id, "/repo", changes)
    assert victim.read_text() == _VICTIM_TEXT
    stored = read_changes_file(runs, run_id)
    assert stored is not None and stored.changes == changes and stored.repo == "/repo"
    assert _private(changes_path(runs, run_id))
    assert sorted(path.name for path in runs.iterdir()) == [f"{run_id}.changes.json", planted.name]


def test_a_batch_summary_is_written_beside_a_symlink_planted_at_its_old_temporary_name(tmp_path: Path) -> None:
    outdir, victim = tmp_path / "out", _victim(tmp_path)
    outdir.mkdir(mode=0o700)
    (outdir / f".summary.json.{os.getpid()}.tmp").symlink_to(victim)
    write_summary(outdir, {"total": 3})
    assert victim.read_text() == _VICTIM_TEXT
    assert json.loads((outdir / "summary.json").read_text()) == {"total": 3}
    assert _private(outdir / "summary.json")


def test_a_nodes_run_files_are_stored_beside_a_fifo_planted_at_their_old_temporary_name(tmp_path: Path) -> None:
    runs, run_id = tmp_path / "runs", str(uuid.uuid4())
    runs.mkdir(mode=0o700)
    name = f"{run_id}.stderr"
    os.mkfifo(runs / f".{name}.{os.getpid()}.tmp")  # an open for writing would wait for a reader for good
    chunks = {0: b"streamed ", 9: b"tail\n"}
    store_run_files(runs, [RunFile(name, 14, None)], lambda _name, offset: chunks.get(offset, b""))
    assert (runs / name).read_bytes() == b"streamed tail\n"
    assert _private(runs / name)


def test_a_patch_is_never_written_through_a_symlink_or_into_a_fifo(tmp_path: Path) -> None:
    runs, victim = tmp_path / "runs", _victim(tmp_path)
    runs.mkdir(mode=0o700)
    linked, piped = str(uuid.uuid4()), str(uuid.uuid4())
    (runs / f"{linked}.patch").symlink_to(victim)
    os.mkfifo(runs / f"{piped}.patch")
    with pytest.raises(OSError):  # ELOOP: O_NOFOLLOW
        open_patch_file(runs, linked)
    with pytest.raises(OSError) as caught:  # O_NONBLOCK: a FIFO without a reader is ENXIO, never a wait
        open_patch_file(runs, piped)
    assert caught.value.errno == errno.ENXIO
    assert victim.read_text() == _VICTIM_TEXT
    fd = open_patch_file(runs, str(uuid.uuid4()))  # a regular patch file opens as before
    os.close(fd)
