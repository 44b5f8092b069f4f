"""A run whose child split an emoji between two chunks and sent two lone surrogates (``MOCK_SPLIT_SURROGATES``), and
a session whose cwd is a path that is not valid UTF-8 (its byte read back as a lone surrogate): the runs page, the
run's page, ``/api/runs`` and the session's page all answer 200; in a real browser the run's message shows the
emoji (each lone half U+FFFD), and the session's page shows the path's lone surrogate as a visible ``\\uXXXX``
escape. Before, encoding the session's page raised and the server answered 500."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from playwright.sync_api import Page, expect

from host.sessions import SessionRecord, write_session_file
from host.sessions._store import new_session_id, now
from tests.ui._helpers import run_task, ui_server


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read().decode("utf-8")


def test_every_page_answers_and_shows_the_text_it_can(tmp_path: Path, page: Page) -> None:
    state = tmp_path / "state"
    result = run_task(state, tmp_path, "task", MOCK_SPLIT_SURROGATES="1")
    stamp = now()
    cwd = "/srv/odd-\udcff-dir"  # os.fsdecode(b"/srv/odd-\xff-dir")
    record = SessionRecord(
        session_id=new_session_id(), provider="fake", kind="acp", created=stamp, last_used=stamp, cwd=cwd
    )
    write_session_file(state, record)
    with ui_server(state) as url:
        runs = _get(url)
        run = _get(f"{url}runs/{result['run_id']}")
        api = _get(f"{url}api/runs")
        session = _get(f"{url}sessions/{record.session_id}")
        page.goto(f"{url}runs/{result['run_id']}")
        page.wait_for_selector("body[data-stream-ended=true]")
        transcript = page.locator("#transcript")
        expect(transcript).to_contain_text("smile 😀, lone \ufffd <\ufffd> mock child answer")
    assert [status for status, _ in (runs, run, api, session)] == [200, 200, 200, 200]
    assert [entry["run_id"] for entry in json.loads(api[1])["runs"]] == [result["run_id"]]
    assert "/srv/odd-\\udcff-dir" in session[1]
