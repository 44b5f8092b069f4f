"""The sessions page and a session's page in a real browser: a session continued by a second process (``run
--session``) is listed with its turns, and its page lists the turns in order, each linking to its run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.cli._helpers import CONSOLE_SCRIPT, write_config
from tests.sessions._helpers import session_entry
from tests.ui._helpers import cli_env, screenshot_dir, ui_server


def _run(state: Path, config: Path, tmp_path: Path, *args: str) -> dict[str, object]:
    done = subprocess.run(
        [CONSOLE_SCRIPT, "run", "--config", str(config), "--json", *args],
        capture_output=True,
        env=cli_env(state),
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_sessions_turns_are_listed_in_order_and_link_to_their_runs(tmp_path: Path, page: Page) -> None:
    state = tmp_path / "state"
    config = write_config(tmp_path, {"agent": session_entry(tmp_path, MOCK_SESSION_RESUME="1")})
    first = _run(state, config, tmp_path, "find the flaky test")
    session_id = str(first["session_id"])
    second = _run(state, config, tmp_path, "--session", session_id, "now fix it")
    with ui_server(state) as url:
        page.goto(url + "sessions")
        row = page.locator("table.sessions tbody tr")
        expect(row).to_have_count(1)
        expect(row).to_contain_text("agent")
        expect(row.locator("td").nth(3)).to_have_text("2")
        row.locator("a").click()
        turns = page.locator("ol.turns li")
        expect(turns).to_have_count(2)
        expect(turns.nth(0)).to_contain_text("turn 1")
        expect(turns.nth(0)).to_contain_text("find the flaky test")
        expect(turns.nth(1)).to_contain_text("turn 2")
        expect(turns.nth(1)).to_contain_text("now fix it")
        page.screenshot(path=str(screenshot_dir() / "session.png"), full_page=True)
        turns.nth(1).locator("a").click()
        page.wait_for_selector("body[data-stream-ended=true]")
        assert page.url.endswith(f"/runs/{second['run_id']}")
        expect(page.locator("#prompt")).to_have_text("now fix it")
