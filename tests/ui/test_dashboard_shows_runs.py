"""The runs page and the run page in a real browser: a fixture state directory of real runs, the filters, the
transcript (thinking collapsed, tool calls, text), and a run started during the test appearing and streaming live."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.ui._helpers import run_task, screenshot_dir, start_task, ui_server


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    state = tmp_path / "state"
    run_task(
        state, tmp_path, "alpha task", provider="alpha", MOCK_THOUGHT="1", MOCK_TOOL_CALL="1", MOCK_TEXT="alpha answer"
    )
    run_task(state, tmp_path, "beta task", provider="beta", MOCK_STOP="refusal", MOCK_TEXT="no")
    run_task(state, tmp_path, "gamma task", provider="alpha", MOCK_TEXT="gamma answer")
    return state


def test_runs_page_lists_every_run_newest_first(state_dir: Path, page: Page) -> None:
    with ui_server(state_dir) as url:
        page.goto(url)
        rows = page.locator("#runs-body tr")
        expect(rows).to_have_count(3)
        expect(rows.nth(0).locator("td.task")).to_have_text("gamma task")
        expect(rows.nth(1)).to_contain_text("beta")
        expect(rows.nth(1)).to_contain_text("refusal")
        expect(rows.nth(2)).to_contain_text("alpha task")
        expect(rows.nth(2)).to_contain_text("completed")
        page.screenshot(path=str(screenshot_dir() / "runs.png"), full_page=True)


def test_filters_narrow_the_list_in_the_page_and_the_json_endpoint(state_dir: Path, page: Page) -> None:
    with ui_server(state_dir) as url:
        page.goto(url)
        page.select_option("select[name=provider]", "alpha")
        page.click("#filters button")
        expect(page.locator("#runs-body tr")).to_have_count(2)
        assert "provider=alpha" in page.url
        page.fill("input[name=q]", "GAMMA")
        page.click("#filters button")
        expect(page.locator("#runs-body tr")).to_have_count(1)
        expect(page.locator("#runs-body td.task")).to_have_text("gamma task")
        # The live refresh keeps the filter.
        page.wait_for_timeout(1500)
        expect(page.locator("#runs-body tr")).to_have_count(1)
        with urllib.request.urlopen(url + "api/runs?status=refusal", timeout=10) as response:
            listed = json.load(response)
        assert [run["provider"] for run in listed["runs"]] == ["beta"]
        assert listed["total"] == 1


def test_run_page_renders_the_transcript_as_runs_show_does(state_dir: Path, page: Page) -> None:
    with ui_server(state_dir) as url:
        page.goto(url)
        page.locator("#runs-body tr").nth(2).locator("a").first.click()
        page.wait_for_selector("body[data-stream-ended=true]")
        expect(page.locator("#prompt")).to_have_text("alpha task")
        expect(page.locator("#run-status")).to_have_text("completed")
        thinking = page.locator("#transcript details.thinking")
        expect(thinking).to_have_count(1)
        assert thinking.get_attribute("open") is None  # collapsed until clicked
        expect(page.locator("#transcript .tool")).to_have_text("[tool] mock tool (read, completed)")
        expect(page.locator("#transcript pre.text")).to_have_text("alpha answer")
        page.click("#stderr summary")
        expect(page.locator("#stderr-text")).not_to_be_empty()
        page.screenshot(path=str(screenshot_dir() / "run.png"), full_page=True)


def test_a_run_started_during_the_test_appears_and_streams_live(tmp_path: Path, page: Page) -> None:
    state = tmp_path / "state"
    run_task(state, tmp_path, "an earlier task")
    with ui_server(state) as url:
        page.goto(url)
        expect(page.locator("#runs-body tr")).to_have_count(1)
        child = start_task(state, tmp_path, "a live task", MOCK_STREAM_CHUNKS="8", MOCK_STREAM_DELAY_MS="400")
        try:
            new_row = page.locator("#runs-body tr").first
            expect(new_row.locator("td.task")).to_have_text("a live task", timeout=15_000)  # no reload
            new_row.locator("a").first.click()
            expect(page.locator("#transcript")).to_contain_text("streamed chunk 1", timeout=15_000)
            # The text arrived while the run was still going.
            expect(page.locator("#run-status")).to_have_text("running")
            expect(page.locator("#transcript")).to_contain_text("streamed chunk 8", timeout=20_000)
            expect(page.locator("#run-status")).to_have_text("completed", timeout=15_000)
            expect(page.locator("#transcript")).to_contain_text("mock child answer")
        finally:
            child.wait(timeout=60)
            if child.stdout is not None:
                child.stdout.close()
