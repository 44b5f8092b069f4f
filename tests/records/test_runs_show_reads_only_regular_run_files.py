"""``runs show`` reads a run's stderr tail and patch only when each is a regular file (docs/behaviour.md#records-files-
and-modes): a FIFO named like one answers at once as no stderr / no patch (it used to block ``open()`` until a writer
came), and a symlink to ``/dev/zero`` is never followed (it used to be read without bound). The records still show.
A huge transcript whose last line never ends is read up to its longest possible record (64 MiB), not whole.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests._state_file_helpers import fifo_at, memory_bounded, sparse_file, symlink_to_dev_zero, write_finished_run
from tests.cli._helpers import CONSOLE_SCRIPT, cli_env

CLI_PROMPT_S = 20.0
"""Each console script's bound: its cold start on a loaded box, and no FIFO wait (a FIFO is released only later)."""


def _show(state: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        memory_bounded(CONSOLE_SCRIPT, "runs", "show", *args, "--state-dir", str(state)),
        capture_output=True,
        env=cli_env(),
        timeout=CLI_PROMPT_S,
        check=False,
    )


def test_a_fifo_stderr_and_patch_answer_at_once_as_none(tmp_path: Path) -> None:
    state = tmp_path / "state"
    run_id = write_finished_run(state)
    runs = state / "runs"
    with (
        fifo_at(runs / f"{run_id}.stderr", release_after_s=CLI_PROMPT_S + 10),
        fifo_at(runs / f"{run_id}.patch", release_after_s=CLI_PROMPT_S + 10),
    ):
        shown = _show(state, run_id, "--json")
        stderr = _show(state, run_id, "--stderr", "--json")
        patch = _show(state, run_id, "--patch")
    assert shown.returncode == 0, shown.stderr
    assert [record["type"] for record in json.loads(shown.stdout)["records"]] == ["run/start", "prompt", "run/end"]
    _assert_neither_was_read(stderr, patch, run_id)


def _assert_neither_was_read(
    stderr: subprocess.CompletedProcess[bytes], patch: subprocess.CompletedProcess[bytes], run_id: str
) -> None:
    """``runs show --stderr`` found no stderr kept, ``runs show --patch`` no patch: neither file was read."""
    assert stderr.returncode == 0, stderr.stderr
    assert json.loads(stderr.stdout)["stderr"] == ""
    assert patch.returncode == 1
    assert patch.stderr.decode() == f'subagent-host: no kept changes match "{run_id}"\n'


def test_a_stderr_symlinked_to_dev_zero_is_not_read(tmp_path: Path) -> None:
    state = tmp_path / "state"
    run_id = write_finished_run(state)
    symlink_to_dev_zero(state / "runs" / f"{run_id}.stderr")
    symlink_to_dev_zero(state / "runs" / f"{run_id}.patch")
    stderr = _show(state, run_id, "--stderr", "--json")
    patch = _show(state, run_id, "--patch")
    _assert_neither_was_read(stderr, patch, run_id)


def test_a_transcript_line_without_end_is_read_only_up_to_the_record_bound(tmp_path: Path) -> None:
    state = tmp_path / "state"
    run_id = write_finished_run(state)
    transcript = state / "runs" / f"{run_id}.jsonl"
    sparse_file(transcript, transcript.read_bytes())  # 8 GiB: its records, then NULs and no newline
    shown = _show(state, run_id, "--json")
    listed = subprocess.run(
        memory_bounded(CONSOLE_SCRIPT, "runs", "list", "--json", "--state-dir", str(state)),
        capture_output=True,
        env=cli_env(),
        timeout=CLI_PROMPT_S,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert [record["type"] for record in json.loads(shown.stdout)["records"]] == ["run/start", "prompt", "run/end"]
    assert listed.returncode == 0, listed.stderr
    assert run_id in listed.stdout.decode()
