"""A session known only from its runs' records (a batch's shared-workspace item writes no session file) still has a
useful page, never a dead link: the runs page links it, its page says that it was not kept and cannot be continued,
shows the provider, cwd and times its records give and its turn linking to the run, and the run page links back;
the sessions page lists it as ``not kept``. Through the console scripts (``batch``, then ``ui``), the HTTP app and
Debian's Chromium."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from pathlib import Path

from playwright.sync_api import Page, expect

from host.ui._pages import NOT_KEPT, NOT_KEPT_NOTE
from tests.cli._helpers import CONSOLE_SCRIPT, acp_entry, write_config
from tests.ui._helpers import cli_env, screenshot_dir, ui_server


def _batch_of_one(tmp_path: Path, outdir: Path) -> dict[str, object]:
    """Run a batch of one shared-workspace item into ``outdir`` (its state directory: runs in ``outdir/runs``)."""
    config = write_config(tmp_path, {"agent": acp_entry(MOCK_TEXT="summarised")})
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "one", "task": "summarise the log"}) + "\n", encoding="utf-8")
    done = subprocess.run(
        [CONSOLE_SCRIPT, "batch", str(tasks), "-o", str(outdir), "--config", str(config)],
        capture_output=True,
        env=cli_env(tmp_path / "unused-state"),
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    [line] = [json.loads(text) for text in (outdir / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    return line


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=15) as response:
        return response.status, response.read().decode("utf-8")


def test_a_batch_items_session_has_a_page_that_says_it_was_not_kept(tmp_path: Path, page: Page) -> None:
    state = tmp_path / "out"
    line = _batch_of_one(tmp_path, state)
    session_id, run_id = str(line["session_id"]), str(line["run_id"])
    assert not (state / "sessions" / f"{session_id}.json").exists()
    with ui_server(state) as url:
        status, body = _get(url + "sessions/" + session_id)
        assert status == 200
        assert 'id="session-not-kept"' in body
        _status, listing = _get(url + "sessions")
        assert f"<td>{NOT_KEPT}</td>" in listing
        page.goto(url)
        row = page.locator("#runs-body tr")
        expect(row).to_have_count(1)
        row.locator("td").nth(5).locator("a").click()
        expect(page.locator("#session-not-kept")).to_have_text(NOT_KEPT_NOTE)
        facts = page.locator("dl.facts")
        expect(facts).to_contain_text("agent")
        expect(facts).to_contain_text(NOT_KEPT)
        expect(facts).to_contain_text(str(tmp_path))
        turns = page.locator("ol.turns li")
        expect(turns).to_have_count(1)
        expect(turns.nth(0)).to_contain_text("summarise the log")
        page.screenshot(path=str(screenshot_dir() / "session-not-kept.png"), full_page=True)
        turns.nth(0).locator("a").click()
        page.wait_for_selector("body[data-stream-ended=true]")
        assert page.url.endswith(f"/runs/{run_id}")
        page.locator("#run-session a").click()
        expect(page.locator("#session-not-kept")).to_be_visible()
