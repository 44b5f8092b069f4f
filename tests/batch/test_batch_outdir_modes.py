"""OUTDIR is the operator's alone: an existing OUTDIR (and its ``runs/``) is made 0700 as a new one is, every file
the batch writes is 0600 (``results.jsonl`` and ``summary.json`` of an earlier, looser directory included), and an
OUTDIR that cannot be made private is refused (exit 2) before anything runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.batch._helpers import acp_entry, result_lines, run_batch, tasks_file, write_config

pytestmark = pytest.mark.anyio


async def test_an_existing_loose_outdir_is_made_private_and_its_files_are_0600(tmp_path: Path) -> None:
    outdir = tmp_path / "out"
    (outdir / "runs").mkdir(parents=True)
    os.chmod(outdir, 0o755)
    os.chmod(outdir / "runs", 0o755)
    for name in ("results.jsonl", "summary.json"):
        (outdir / name).write_bytes(b"")
        os.chmod(outdir / name, 0o644)
    config = write_config(tmp_path, {"agent": acp_entry()})
    tasks = tasks_file(tmp_path / "tasks.jsonl", [{"id": "a", "task": "t"}, {"id": "b", "task": "t"}])
    done = await run_batch(str(tasks), "-o", str(outdir), "--config", str(config), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(result_lines(outdir)) == 2
    assert os.stat(outdir).st_mode & 0o777 == 0o700
    assert os.stat(outdir / "runs").st_mode & 0o777 == 0o700
    written = [outdir / "results.jsonl", outdir / "summary.json", *(outdir / "runs").iterdir()]
    assert len(written) >= 4
    assert {path.name: path.stat().st_mode & 0o777 for path in written} == dict.fromkeys(
        [path.name for path in written], 0o600
    )


async def test_an_outdir_that_cannot_be_made_private_is_refused(tmp_path: Path) -> None:
    config = write_config(tmp_path, {"agent": acp_entry()})
    tasks = tasks_file(tmp_path / "tasks.jsonl", [{"id": "a", "task": "t"}])
    # A directory whose mode nobody may change (not even root): the batch's own /proc entry.
    done = await run_batch(str(tasks), "-o", "/proc/self/fdinfo", "--config", str(config), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "subagent-host: cannot make /proc/self/fdinfo private (0700): Operation not permitted" in (
        done.stderr.decode()
    )
