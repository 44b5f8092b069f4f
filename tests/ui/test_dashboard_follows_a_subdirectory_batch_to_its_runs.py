"""A batch OUTDIR below the state directory is a state directory of its own (its runs/ and sessions/ are inside it):
its page, its filtered runs list, its runs' pages, their event streams and stderr, and their sessions all read it
through ``?batch=<name>``, a name the state directory's listing holds (anything else is 404), and every link the
pages build carries it. The top-level batch (``.``: the state directory itself) links as before, with no parameter.

One module-wide state directory holds real batch output made by the CLI: the state directory is a batch OUTDIR
(``.``) with a subdirectory batch ``nightly`` below it, one run recorded outside both batches, a copy of ``nightly``
under a name full of markup and URL characters (with a kept patch), and two symlinked directories that hold a batch
(one pointing outside the state directory) that must never be reachable."""

from __future__ import annotations

import html
import http.client
import json
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from playwright.sync_api import Page, expect

from tests.cli._helpers import CONSOLE_SCRIPT, acp_entry, write_config
from tests.records._helpers import sdk_entry
from tests.ui._helpers import cli_env, digest_tree, run_task, ui_server

STDERR_LINE = "stderr of the sdk item"
ODD_NAME = 'night & "day" <b> #?%+ x'
"""A batch directory name that is markup, a fragment, a query and a percent escape at once."""
ODD_QUERY = "night+%26+%22day%22+%3Cb%3E+%23%3F%25%2B+x"
PATCH = "diff --git a/notes.txt b/notes.txt\n--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-old\n+new\n"


@dataclass(frozen=True, slots=True)
class _Layout:
    state: Path
    top: dict[str, dict[str, Any]]
    """The top-level batch's result lines by item id."""
    nightly: dict[str, dict[str, Any]]
    outside_run: str
    """A run in ``<state>/runs`` that no batch names."""
    digest: dict[str, str]


def _batch(tasks: list[dict[str, Any]], out: Path, base: Path, config: Path) -> dict[str, dict[str, Any]]:
    task_file = base / f"{out.name}-tasks.jsonl"
    task_file.write_text("".join(json.dumps(task) + "\n" for task in tasks), encoding="utf-8")
    subprocess.run(
        [CONSOLE_SCRIPT, "batch", str(task_file), "-o", str(out), "--config", str(config)],
        env=cli_env(base),
        cwd=base,
        capture_output=True,
        timeout=120,
        check=False,
    )
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {line["id"] for line in lines} == {task["id"] for task in tasks}
    return {line["id"]: line for line in lines}


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> _Layout:
    base = tmp_path_factory.mktemp("subdirectory-batch")
    state = base / "state"
    config = write_config(
        base,
        {
            "ok": acp_entry(MOCK_TEXT="fine"),
            "no": acp_entry(MOCK_STOP="refusal"),
            "sdk": sdk_entry(FAKE_STDERR=STDERR_LINE),
        },
    )
    top = _batch([{"id": f"t{n}", "task": f"top item {n}", "provider": "ok"} for n in range(2)], state, base, config)
    nightly_tasks = [
        {"id": "n0", "task": "nightly item 0", "provider": "ok"},
        {"id": "n1", "task": "nightly item 1", "provider": "ok"},
        {"id": "n2", "task": "nightly item 2", "provider": "sdk"},
        {"id": "n3", "task": "nightly item 3", "provider": "no"},
    ]
    nightly = _batch(nightly_tasks, state / "nightly", base, config)
    outside_run = run_task(state, base, "outside every batch")["run_id"]
    odd = state / ODD_NAME
    shutil.copytree(state / "nightly", odd)
    (odd / "runs" / f"{nightly['n0']['run_id']}.patch").write_text(PATCH, encoding="utf-8")
    shutil.copytree(state / "nightly", base / "outside")
    (state / "elsewhere").symlink_to(base / "outside", target_is_directory=True)
    (state / "alias").symlink_to(state / "nightly", target_is_directory=True)
    return _Layout(state, top, nightly, outside_run, digest_tree(state))


def _get(url: str, path: str) -> tuple[int, str]:
    """``path`` sent exactly as written (no client-side normalisation); the status and the body."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=20)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        connection.close()


def _run_links(body: str) -> list[str]:
    return [html.unescape(found) for found in re.findall(r'href="(/runs/[^"]*)"', body)]


def _q(name: str) -> str:
    return quote(name, safe="")


def test_each_batch_page_links_its_runs_and_every_link_resolves(layout: _Layout) -> None:
    with ui_server(layout.state) as url:
        for name, results, suffix in [(".", layout.top, ""), ("nightly", layout.nightly, "?batch=nightly")]:
            status, body = _get(url, f"/batch?name={_q(name)}")
            assert status == 200
            links = _run_links(body)
            assert set(links) == {f"/runs/{line['run_id']}{suffix}" for line in results.values()}  # slowest, failed
            for line in results.values():
                status, run_body = _get(url, f"/runs/{line['run_id']}{suffix}")
                assert status == 200, (name, line["id"])
                assert f"Run {line['run_id'][:8]}" in run_body
                assert f"<dd>{line['provider']} (" in run_body  # the run's own facts, from its record
                assert f'data-run="{line["run_id"]}"' in run_body
        failed = layout.nightly["n3"]["run_id"]
        status, body = _get(url, "/batch?name=nightly")
        assert f'href="/runs/{failed}?batch=nightly">{failed[:8]}</a></td><td>refusal' in body
        assert 'id="batch-runs" href="/?batch=nightly"' in body


def test_the_runs_list_of_a_subdirectory_batch_lists_its_own_runs_and_links_them(layout: _Layout) -> None:
    nightly_ids = {line["run_id"] for line in layout.nightly.values()}
    with ui_server(layout.state) as url:
        status, body = _get(url, "/api/runs?batch=nightly")
        assert status == 200
        listed = json.loads(body)
        assert listed["total"] == 4
        assert {run["run_id"] for run in listed["runs"]} == nightly_ids
        assert {run["task"] for run in listed["runs"]} == {f"nightly item {n}" for n in range(4)}
        # The other filters apply as usual, within the batch's own runs.
        for query, item in [("status=refusal", "n3"), ("provider=sdk", "n2"), ("q=ITEM+1", "n1")]:
            status, body = _get(url, f"/api/runs?batch=nightly&{query}")
            assert [run["run_id"] for run in json.loads(body)["runs"]] == [layout.nightly[item]["run_id"]], query
        status, body = _get(url, "/?batch=nightly")
        assert status == 200
        assert sorted(_run_links(body)) == sorted(f"/runs/{run_id}?batch=nightly" for run_id in nightly_ids)
        assert 'data-batch-query="batch=nightly"' in body
        assert layout.outside_run not in body
        # The top-level batch lists its own runs from the state directory, linked without a parameter.
        status, body = _get(url, "/api/runs?batch=.")
        assert {run["run_id"] for run in json.loads(body)["runs"]} == {line["run_id"] for line in layout.top.values()}
        status, body = _get(url, "/?batch=.")
        assert sorted(_run_links(body)) == sorted(f"/runs/{line['run_id']}" for line in layout.top.values())


def test_a_subdirectory_batch_runs_events_and_stderr_are_served(layout: _Layout) -> None:
    sdk_run = layout.nightly["n2"]["run_id"]
    with ui_server(layout.state) as url:
        status, body = _get(url, f"/api/runs/{sdk_run}/events?batch=nightly")
        assert status == 200
        records = [json.loads(line[len("data: ") :]) for line in body.splitlines() if line.startswith('data: {"')]
        assert records[0]["type"] == "run/start"
        assert records[0]["data"]["run_id"] == sdk_run
        assert records[-1]["type"] == "run/end"
        assert body.endswith("event: end\ndata: {}\n\n")
        assert _get(url, f"/api/runs/{sdk_run}/stderr?batch=nightly") == (200, STDERR_LINE + "\n")
        # Without the batch the run is not the state directory's own.
        assert _get(url, f"/api/runs/{sdk_run}/events")[0] == 404
        assert _get(url, f"/api/runs/{sdk_run}/stderr")[0] == 404
        assert _get(url, f"/runs/{sdk_run}")[0] == 404
        top_run = layout.top["t0"]["run_id"]
        assert _get(url, f"/api/runs/{top_run}/events")[0] == 200
        assert _get(url, f"/api/runs/{top_run}/events?batch=.")[0] == 200


def test_a_batch_run_links_its_session_and_the_session_links_back(layout: _Layout) -> None:
    line = layout.nightly["n1"]
    session_id, run_id = line["session_id"], line["run_id"]
    with ui_server(layout.state) as url:
        status, body = _get(url, f"/runs/{run_id}?batch=nightly")
        assert status == 200
        assert f'<a href="/sessions/{session_id}?batch=nightly">' in body
        status, body = _get(url, f"/sessions/{session_id}?batch=nightly")
        assert status == 200
        assert 'id="session-not-kept"' in body  # a batch keeps no file for a shared-workspace item
        assert _run_links(body) == [f"/runs/{run_id}?batch=nightly"]
        assert "<dd>ok</dd>" in body
        status, body = _get(url, "/sessions?batch=nightly")
        assert status == 200
        assert body.count("?batch=nightly") == 4
        assert _get(url, f"/sessions/{session_id}")[0] == 404


def test_only_a_batch_name_the_listing_holds_reaches_a_directory(layout: _Layout) -> None:
    line = layout.nightly["n2"]
    run_id, session_id = line["run_id"], line["session_id"]
    top_run = layout.top["t0"]["run_id"]
    routes = [
        f"/runs/{run_id}",
        f"/api/runs/{run_id}/events",
        f"/api/runs/{run_id}/stderr",
        f"/sessions/{session_id}",
        "/sessions",
        f"/runs/{top_run}",
        f"/api/runs/{top_run}/events",
    ]
    refused = [
        "nope",
        "..",
        "%2F",
        "%2Fetc",
        _q(str(layout.state / "nightly")),
        "nightly%2F",
        "nightly%2F..",
        "..%2Fstate%2Fnightly",
        "runs",
        "nightly%00",
        "elsewhere",  # a symlinked directory holding a batch, outside the state directory
        "alias",  # a symlink to the listed batch itself
    ]
    answers: dict[str, int] = {}
    with ui_server(layout.state) as url:
        for route in routes[:5]:
            assert _get(url, f"{route}?batch=nightly")[0] == 200, route
        for route in routes:
            for batch in refused:
                path = f"{route}?batch={batch}"
                status, body = _get(url, path)
                answers[path] = status
                assert STDERR_LINE not in body
    assert {path: status for path, status in answers.items() if status != 404} == {}


def test_a_batch_named_with_markup_and_url_characters_links_safely(layout: _Layout) -> None:
    run_id = layout.nightly["n0"]["run_id"]
    with ui_server(layout.state) as url:
        status, body = _get(url, "/batches")
        assert html.escape(ODD_NAME) in body and ODD_NAME not in body
        status, body = _get(url, f"/batch?name={_q(ODD_NAME)}")
        assert status == 200
        assert f"<h1>Batch {html.escape(ODD_NAME)}</h1>" in body
        links = _run_links(body)
        assert f"/runs/{run_id}?batch={ODD_QUERY}" in links
        for link in links:
            assert _get(url, link)[0] == 200, link
        status, body = _get(url, f"/runs/{run_id}?batch={_q(ODD_NAME)}")
        assert status == 200
        assert f'data-batch-query="batch={ODD_QUERY}"' in body
        # The kept patch's apply command names the batch's own state directory, quoted for a shell.
        command = html.unescape(re.findall(r"<code>(subagent-host runs apply [^<]*)</code>", body)[0])
        assert command == f"subagent-host runs apply --state-dir {shlex.quote(str(layout.state / ODD_NAME))} {run_id}"
        assert "new" in body and 'class="diff-add"' in body


def test_clicking_through_a_subdirectory_batch_in_a_browser_changes_nothing(layout: _Layout, page: Page) -> None:
    failed, sdk_item = layout.nightly["n3"], layout.nightly["n2"]
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    with ui_server(layout.state) as url:
        page.goto(url + "batches")
        page.get_by_role("link", name="nightly", exact=True).click()
        expect(page.locator("h1")).to_have_text("Batch nightly")
        page.locator("table.failed").get_by_role("link", name=failed["run_id"][:8]).click()
        expect(page.locator("h1")).to_have_text(f"Run {failed['run_id'][:8]}")
        page.wait_for_selector("body[data-stream-ended=true]")
        expect(page.locator("#prompt")).to_have_text("nightly item 3")  # from the batch's own event stream
        expect(page.locator("#run-status")).to_have_text("refusal")
        page.locator("#run-session a").click()
        expect(page.locator("#session-not-kept")).to_be_visible()
        page.locator("ol.turns a").click()
        expect(page.locator("h1")).to_have_text(f"Run {failed['run_id'][:8]}")
        page.goto(url + "batch?name=nightly")
        page.locator("#batch-runs").click()
        expect(page.locator("#runs-body tr")).to_have_count(4)
        page.wait_for_timeout(1500)  # the script has rebuilt the rows (and their links) from /api/runs
        page.locator(f'#runs-body tr[data-run="{sdk_item["run_id"]}"] a').first.click()
        expect(page.locator("h1")).to_have_text(f"Run {sdk_item['run_id'][:8]}")
        page.wait_for_selector("body[data-stream-ended=true]")
        page.click("#stderr summary")
        expect(page.locator("#stderr-text")).to_contain_text(STDERR_LINE)
    assert any("/events?batch=nightly" in request for request in requests)
    assert any("/stderr?batch=nightly" in request for request in requests)
    assert all(request.startswith(url) for request in requests)
    assert digest_tree(layout.state) == layout.digest
