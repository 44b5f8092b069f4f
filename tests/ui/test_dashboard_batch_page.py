"""The batch page of a batch OUTDIR: progress, the stop-reason bar chart, the duration histogram, the slowest and
the failed items with their diagnostics, all drawn in the page (SVG, no external asset)."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Page, expect

from tests.ui._helpers import screenshot_dir, ui_server, write_batch

DIAGNOSTIC = "Subagent failure (provider: ACP; stage: process; category: process-start)"


def test_batch_page_charts_stop_reasons_and_durations(tmp_path: Path, page: Page) -> None:
    state = tmp_path / "state"
    items = [
        {"id": f"ok-{i}", "run_id": f"run-ok-{i}", "stop_reason": "completed", "duration_ms": 1000 + 250 * i}
        for i in range(6)
    ]
    items += [
        {"id": "bad-1", "run_id": "run-bad-1", "stop_reason": "error", "duration_ms": 90, "diagnostic": DIAGNOSTIC},
        {"id": "bad-2", "run_id": "run-bad-2", "stop_reason": "error", "duration_ms": 120, "diagnostic": DIAGNOSTIC},
        {"id": "<b>no</b>", "run_id": "run-refused", "stop_reason": "refusal", "duration_ms": 9000},
    ]
    write_batch(state / "nightly", items, total=12)
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    with ui_server(state) as url:
        page.goto(url + "batches")
        page.get_by_role("link", name="nightly").click()
        expect(page.locator("h1")).to_have_text("Batch nightly")
        expect(page.locator("p.count")).to_contain_text("9 of 12 items done")
        assert page.locator("#batch-progress").get_attribute("value") == "9"
        charts = page.locator("svg.chart")
        expect(charts).to_have_count(2)
        bars = charts.nth(0).locator("rect")
        expect(bars).to_have_count(3)
        expect(charts.nth(0)).to_contain_text("completed")
        expect(charts.nth(0)).to_contain_text("6")
        assert charts.nth(1).locator("rect").count() == 12
        slowest = page.locator("table.items").first.locator("tbody tr")
        expect(slowest.first).to_contain_text("<b>no</b>")
        failed = page.locator("table.failed")
        expect(failed).to_contain_text(DIAGNOSTIC)
        expect(failed).to_contain_text("bad-2")
        page.screenshot(path=str(screenshot_dir() / "batch.png"), full_page=True)
    assert all(request.startswith(url) for request in requests)


def test_batch_filter_on_the_runs_page_shows_only_its_runs(tmp_path: Path, page: Page) -> None:
    from tests.ui._helpers import run_task

    state = tmp_path / "state"
    # A batch OUTDIR below the state directory is a state directory of its own: its runs are under b1/runs.
    inside = run_task(state / "b1", tmp_path, "inside the batch")
    run_task(state / "b1", tmp_path, "an earlier attempt the results do not name")
    run_task(state, tmp_path, "outside the batch")
    write_batch(state / "b1", [{"id": "one", "run_id": inside["run_id"], "stop_reason": "completed"}])
    with ui_server(state) as url:
        page.goto(url + "?batch=b1")
        expect(page.locator("#runs-body tr")).to_have_count(1)
        expect(page.locator("#runs-body td.task")).to_have_text("inside the batch")
        page.wait_for_timeout(1500)  # the script's refresh rebuilds the rows (and their links)
        page.locator("#runs-body a").first.click()
        expect(page.locator("h1")).to_have_text(f"Run {inside['run_id'][:8]}")
        assert page.url == f"{url}runs/{inside['run_id']}?batch=b1"


def test_a_real_batch_outdir_shows_its_counts_once_per_item_and_filters_its_runs(tmp_path: Path, page: Page) -> None:
    import json
    import subprocess

    from tests.cli._helpers import CONSOLE_SCRIPT, acp_entry, write_config
    from tests.ui._helpers import cli_env

    config = write_config(tmp_path, {"ok": acp_entry(MOCK_TEXT="fine"), "no": acp_entry(MOCK_STOP="refusal")})
    tasks = tmp_path / "tasks.jsonl"
    items = [{"id": f"i{n}", "task": f"item {n}", "provider": "no" if n == 3 else "ok"} for n in range(4)]
    tasks.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    out = tmp_path / "out"
    for extra in ([], ["--redo-existing"]):  # the second pass appends a second line per id
        subprocess.run(
            [CONSOLE_SCRIPT, "batch", str(tasks), "-o", str(out), "--config", str(config), *extra],
            env=cli_env(tmp_path),
            capture_output=True,
            timeout=120,
            check=False,
        )
    assert len((out / "results.jsonl").read_text(encoding="utf-8").splitlines()) == 8
    with ui_server(out) as url:
        page.goto(url + "batch?name=.")
        expect(page.locator("p.count")).to_contain_text("4 of 4 items done; wall time")
        first_chart = page.locator("svg.chart").first
        expect(first_chart).to_contain_text("completed")
        expect(first_chart).to_contain_text("refusal")
        expect(first_chart.locator("text.count")).to_have_text(["3", "1"])
        page.goto(url + "?batch=.")
        expect(page.locator("#runs-body tr")).to_have_count(4)  # the last attempt of each item
