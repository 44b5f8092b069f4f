"""Child-controlled text on the dashboard cannot drive the page: markup, event handlers, ``javascript:`` URLs and
terminal or bidi controls are shown as text; nothing executes, navigates or fetches, and the CSP forbids inline
script."""

from __future__ import annotations

import urllib.request
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.ui._helpers import run_task, screenshot_dir, ui_server

PAYLOAD = (
    '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
    '<a href="javascript:window.__pwned = 3">click me</a> \x1b]52;c;cHduZWQ=\x07 \u202eevil'
)


def test_markup_in_child_text_and_task_is_shown_not_run(tmp_path: Path, page: Page) -> None:
    state = tmp_path / "state"
    result = run_task(state, tmp_path, "task " + PAYLOAD, MOCK_TEXT="answer " + PAYLOAD, MOCK_THOUGHT="1")
    dialogs: list[str] = []
    requests: list[str] = []
    navigations: list[str] = []
    page.on("dialog", lambda dialog: dialogs.append(dialog.message))
    page.on("request", lambda request: requests.append(request.url))
    page.on("framenavigated", lambda frame: navigations.append(frame.url))
    with ui_server(state) as url:
        page.goto(url)
        expect(page.locator("#runs-body td.task")).to_contain_text("<script>window.__pwned = 1</script>")
        page.goto(f"{url}runs/{result['run_id']}")
        page.wait_for_selector("body[data-stream-ended=true]")
        transcript = page.locator("#transcript pre.text")
        expect(transcript).to_contain_text('<img src=x onerror="window.__pwned = 2">')
        expect(transcript).to_contain_text("\\x1b]52;c;cHduZWQ=\\x07")
        expect(transcript).to_contain_text("\\u202eevil")
        expect(page.locator("#prompt")).to_contain_text("<script>window.__pwned = 1</script>")
        assert page.locator("#transcript a, #prompt a, #transcript img, #transcript script").count() == 0
        page.get_by_text("click me").first.click()
        page.wait_for_timeout(500)
        assert page.evaluate("() => window.__pwned") is None
        page.screenshot(path=str(screenshot_dir() / "run-escaped.png"), full_page=True)
        with urllib.request.urlopen(url, timeout=10) as response:
            csp = response.headers["Content-Security-Policy"]
    assert dialogs == []
    assert navigations == [url, f"{url}runs/{result['run_id']}"]
    assert all(request.startswith(url) for request in requests), requests
    assert "script-src 'self'" in csp
    assert "unsafe-inline" not in csp
    assert "default-src 'none'" in csp
