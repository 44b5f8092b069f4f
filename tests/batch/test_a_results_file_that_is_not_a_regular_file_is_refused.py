"""An OUTDIR whose ``results.jsonl`` is not a regular file the batch can own is refused at once (exit 2) before
anything runs: a FIFO (the batch used to wait on it for ever, holding its own write end) or a symlink (it used to
be followed: the batch appended to, and chmod-ed, whatever file it named)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests._state_file_helpers import fifo_at
from tests.batch._helpers import acp_entry, run_batch, tasks_file, write_config

pytestmark = pytest.mark.anyio

PROMPT_S = 20.0
"""The batch's bound: a cold start on a loaded box, and no FIFO wait."""


async def test_a_fifo_results_file_is_refused_at_once(tmp_path: Path) -> None:
    outdir = tmp_path / "out"
    config = write_config(tmp_path, {"agent": acp_entry()})
    tasks = tasks_file(tmp_path / "tasks.jsonl", [{"id": "a", "task": "t"}])
    with fifo_at(outdir / "results.jsonl", release_after_s=PROMPT_S + 10), anyio.fail_after(PROMPT_S):
        done = await run_batch(str(tasks), "-o", str(outdir), "--config", str(config), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.decode().splitlines()[-1] == (
        f"subagent-host: cannot use {outdir}: results.jsonl is not a regular file"
    )
    assert not (outdir / "runs").exists()


async def test_a_symlinked_results_file_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    outdir = tmp_path / "out"
    outdir.mkdir(mode=0o700)
    target = tmp_path / "elsewhere.txt"
    target.write_bytes(b"the operator's own file\n")
    target.chmod(0o644)
    (outdir / "results.jsonl").symlink_to(target)
    config = write_config(tmp_path, {"agent": acp_entry()})
    tasks = tasks_file(tmp_path / "tasks.jsonl", [{"id": "a", "task": "t"}])
    with anyio.fail_after(PROMPT_S):
        done = await run_batch(str(tasks), "-o", str(outdir), "--config", str(config), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.decode().splitlines()[-1] == (f"subagent-host: cannot use {outdir}: results.jsonl is a symlink")
    assert target.read_bytes() == b"the operator's own file\n"
    assert target.stat().st_mode & 0o777 == 0o644
