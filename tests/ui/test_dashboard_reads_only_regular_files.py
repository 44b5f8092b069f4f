"""The dashboard reads a run's patch and stderr, and the session files, only when each is a regular file
(docs/behaviour.md#records-files-and-modes): with a FIFO or a symlink to ``/dev/zero`` named like one, the run page,
its stderr, the sessions pages and a batch's page (its ``summary.json``) answer at once, as if the file were not
there. A FIFO used to hold a worker
thread in ``open()`` per request (anyio's 40 threads, then every page hung). A session file is read up to the
host's own bound (16 MiB), so a session of thousands of turns is listed too (64 KiB used to drop it)."""

from __future__ import annotations

import urllib.error
import urllib.request
import uuid
from pathlib import Path

from host.sessions._store import SessionRecord, new_session_id, write_session_file
from tests._state_file_helpers import fifo_at, symlink_to_dev_zero, write_finished_run
from tests.ui._helpers import ui_server, write_batch

PROMPT_S = 10.0
"""How long one page may take (a FIFO's blocked reader is released only after ``RELEASE_S``)."""
RELEASE_S = 30.0


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=PROMPT_S) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_a_runs_fifo_stderr_and_patch_and_a_fifo_session_answer_at_once(tmp_path: Path) -> None:
    state = tmp_path / "state"
    run_id, zero_run = write_finished_run(state), write_finished_run(state)
    runs, sessions = state / "runs", state / "sessions"
    fifo_session = new_session_id()
    symlink_to_dev_zero(runs / f"{zero_run}.stderr")
    symlink_to_dev_zero(runs / f"{zero_run}.patch")
    with (
        ui_server(state) as url,
        fifo_at(runs / f"{run_id}.stderr", release_after_s=RELEASE_S),
        fifo_at(runs / f"{run_id}.patch", release_after_s=RELEASE_S),
        fifo_at(sessions / f"{fifo_session}.json", release_after_s=RELEASE_S),
    ):
        run_page = _get(f"{url}runs/{run_id}")
        stderr = _get(f"{url}api/runs/{run_id}/stderr")
        sessions_page = _get(f"{url}sessions")
        session_page = _get(f"{url}sessions/{fifo_session}")
        zero_page = _get(f"{url}runs/{zero_run}")
        zero_stderr = _get(f"{url}api/runs/{zero_run}/stderr")
    assert run_page[0] == 200
    assert run_id in run_page[1]
    assert stderr == (404, "")
    assert sessions_page[0] == 200
    assert fifo_session not in sessions_page[1]
    assert session_page[0] == 404
    assert zero_page[0] == 200
    assert zero_stderr == (404, "")


def test_a_session_of_thousands_of_turns_is_listed(tmp_path: Path) -> None:
    state = tmp_path / "state"
    stamp = "2026-12-05T05:00:00.000Z"
    runs = [str(uuid.UUID(int=index)) for index in range(3000)]  # ~120 KiB: the host reads files up to 16 MiB
    record = SessionRecord(
        session_id=new_session_id(), provider="acp", kind="acp", created=stamp, last_used=stamp, turns=3000, runs=runs
    )
    write_session_file(state, record)
    with ui_server(state) as url:
        status, body = _get(f"{url}sessions")
    assert status == 200
    assert record.session_id in body


def test_a_batch_whose_summary_is_a_fifo_answers_at_once(tmp_path: Path) -> None:
    state = tmp_path / "state"
    write_batch(state / "nightly", [{"id": "a", "run_id": str(uuid.uuid4()), "stop_reason": "completed"}])
    with ui_server(state) as url, fifo_at(state / "nightly" / "summary.json", release_after_s=RELEASE_S):
        status, body = _get(f"{url}batch?name=nightly")
    assert status == 200
    assert "nightly" in body
