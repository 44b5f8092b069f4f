"""Who may read the dashboard: a non-loopback bind needs a private token file and answers 401 without the token;
a loopback bind rejects foreign Host headers (DNS rebinding); no path reaches a file outside the state directory;
every signal ends it cleanly; visiting every page changes nothing in the state directory."""

from __future__ import annotations

import http.client
import signal
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

from tests.cli._helpers import CONSOLE_SCRIPT
from tests.ui._helpers import cli_env, digest_tree, run_task, ui_server, write_batch

TOKEN = "s3cret-token-for-the-dashboard"


def _status(url: str, headers: dict[str, str] | None = None) -> int:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def _token_file(tmp_path: Path, mode: int = 0o600) -> Path:
    path = tmp_path / "token"
    path.write_text(TOKEN + "\n", encoding="utf-8")
    path.chmod(mode)
    return path


def test_non_loopback_bind_without_a_token_file_is_a_usage_error(tmp_path: Path) -> None:
    completed = subprocess.run(
        [CONSOLE_SCRIPT, "ui", "--http", "0.0.0.0:0", "--state-dir", str(tmp_path)],
        capture_output=True,
        env=cli_env(tmp_path),
        timeout=30,
        check=False,
    )
    assert completed.returncode == 2
    assert completed.stderr == b"subagent-host: binding 0.0.0.0 (not loopback) requires --auth-token-file\n"


def test_a_token_file_readable_by_others_is_refused(tmp_path: Path) -> None:
    token = _token_file(tmp_path, 0o644)
    completed = subprocess.run(
        [CONSOLE_SCRIPT, "ui", "--http", "0.0.0.0:0", "--auth-token-file", str(token), "--state-dir", str(tmp_path)],
        capture_output=True,
        env=cli_env(tmp_path),
        timeout=30,
        check=False,
    )
    assert completed.returncode == 2
    assert b"must not be readable by group or others" in completed.stderr


def test_non_loopback_bind_answers_401_without_the_token(tmp_path: Path, page: Page) -> None:
    state = tmp_path / "state"
    run_task(state, tmp_path, "a guarded task")
    token = _token_file(tmp_path)
    with ui_server(state, "--auth-token-file", str(token), address="0.0.0.0:0") as url:
        assert _status(url) == 401
        assert _status(url + "api/runs") == 401
        assert _status(url + "static/app.js") == 401
        assert _status(url, {"Authorization": "Bearer wrong"}) == 401
        assert _status(url, {"Authorization": f"Bearer {TOKEN}"}) == 200
        # A browser presents the token once; an HttpOnly cookie carries it from then on.
        page.goto(f"{url}?token={TOKEN}")
        assert "token" not in page.url
        expect(page.locator("#runs-body td.task")).to_have_text("a guarded task")
        cookie = page.context.cookies()[0]
        assert cookie.get("httpOnly") is True
        assert cookie.get("sameSite") == "Strict"


def test_loopback_bind_rejects_a_foreign_host_header(tmp_path: Path) -> None:
    with ui_server(tmp_path) as url:
        assert _status(url) == 200
        assert _status(url, {"Host": "attacker.example"}) == 421
        assert _status(url, {"Host": "attacker.example:8766"}) == 421


@pytest.mark.parametrize(
    "path",
    [
        "/runs/..%2F..%2F..%2Fetc%2Fpasswd",
        "/api/runs/..%2F..%2Fetc%2Fpasswd/stderr",
        "/api/runs/..%2Fsessions%2Fx/events",
        "/static/..%2F_app.py",
        "/static/%2Fetc%2Fpasswd",
        "/batch?name=..",
        "/batch?name=%2Fetc",
        "/sessions/..%2F..%2Fetc%2Fpasswd",
    ],
)
def test_no_path_reaches_a_file_outside_the_state_directory(tmp_path: Path, path: str) -> None:
    state = tmp_path / "state"
    write_batch(state / "b", [{"id": "x", "run_id": "r", "stop_reason": "completed"}])
    (tmp_path / "secret.txt").write_text("outside the state directory", encoding="utf-8")
    with ui_server(state) as url:
        parts = urlsplit(url)
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
        try:
            connection.request("GET", path)
            response = connection.getresponse()
            body = response.read()
        finally:
            connection.close()
    assert response.status == 404
    assert b"root:" not in body
    assert b"outside the state directory" not in body


def test_visiting_every_page_changes_nothing_in_the_state_directory(tmp_path: Path, page: Page) -> None:
    state = tmp_path / "state"
    result = run_task(state, tmp_path, "read me")
    write_batch(state / "b", [{"id": "x", "run_id": result["run_id"], "stop_reason": "completed"}], total=1)
    before = digest_tree(state)
    with ui_server(state) as url:
        for path in ["", "api/runs", "sessions", "batches", "batch?name=b", f"runs/{result['run_id']}"]:
            page.goto(url + path)
        page.wait_for_selector("body[data-stream-ended=true]")
        page.click("#stderr summary")
        page.wait_for_timeout(300)
    assert digest_tree(state) == before


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGHUP, signal.SIGTERM])
def test_every_signal_ends_the_dashboard_cleanly(tmp_path: Path, signum: signal.Signals) -> None:
    process = subprocess.Popen(
        [CONSOLE_SCRIPT, "ui", "--http", "127.0.0.1:0", "--state-dir", str(tmp_path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=cli_env(tmp_path),
    )
    try:
        assert process.stderr is not None
        assert b"dashboard at http://127.0.0.1:" in process.stderr.readline()
        process.send_signal(signum)
        assert process.wait(timeout=20) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


@pytest.mark.parametrize("path", ["//attacker.example/", "/\\attacker.example/", "///attacker.example/x"])
def test_the_token_redirect_never_leaves_the_dashboard(tmp_path: Path, path: str) -> None:
    token = _token_file(tmp_path)
    with ui_server(tmp_path, "--auth-token-file", str(token), address="0.0.0.0:0") as url:
        parts = urlsplit(url)
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
        try:
            connection.request("GET", f"{path}?token={TOKEN}")
            response = connection.getresponse()
            response.read()
        finally:
            connection.close()
    assert response.status == 303
    location = response.getheader("Location") or ""
    assert location.startswith("/") and not location.startswith(("//", "/\\")), location
