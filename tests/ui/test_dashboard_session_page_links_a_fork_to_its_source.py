"""A forked session's page says which session it was forked from and links to it while the state directory still
knows that session; a source it no longer knows is shown as text, never a dead link; a session that is not a fork
shows no such line. Through ``subagent-host ui`` and Debian's Chromium, over session files as a host writes them."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from host.sessions._store import SessionRecord, new_session_id, write_session_file
from tests.ui._helpers import ui_server

_WHEN = "2999-01-01T00:00:00.000Z"


def _session(state: Path, forked_from: str | None = None) -> str:
    record = SessionRecord(
        session_id=new_session_id(),
        provider="agent",
        kind="acp",
        created=_WHEN,
        last_used=_WHEN,
        turns=1,
        forked_from=forked_from,
    )
    write_session_file(state, record)
    return record.session_id


def test_a_forks_page_links_to_its_source_and_names_a_forgotten_one(tmp_path: Path, page: Page) -> None:
    state = tmp_path / "state"
    source = _session(state)
    fork = _session(state, forked_from=source)
    forgotten = new_session_id()  # a source whose file is gone and that no run names
    orphan = _session(state, forked_from=forgotten)
    with ui_server(state) as url:
        page.goto(f"{url}sessions/{fork}")
        link = page.locator("#session-fork-source a")
        expect(link).to_have_text(source[:12])
        link.click()
        page.wait_for_url(f"{url}sessions/{source}")
        expect(page.locator("h1")).to_have_text(f"Session {source[:12]}")
        expect(page.locator("#session-fork-source")).to_have_count(0)  # the source is not a fork
        page.goto(f"{url}sessions/{orphan}")
        expect(page.locator("#session-fork-source")).to_have_text(forgotten)
        expect(page.locator("#session-fork-source a")).to_have_count(0)
