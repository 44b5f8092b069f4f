"""Driving ``subagent-host ui`` in the tests: the console script as a subprocess, real runs to fill a state
directory, and Debian's Chromium through Playwright (never a downloaded browser).

The browser and Playwright's driver are started without the suite's leak marker in their environment (they live
for a whole module); every ``ui`` server and every ``run`` is a marked child that each test ends itself.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Generator, Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.cli._helpers import CONSOLE_SCRIPT, acp_entry, write_config
from tests.conftest import MARKER_NAME

CHROMIUM = "/usr/bin/chromium"
# The flags this machine's Chromium needs headless as root, with no network but loopback.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SERVER_START_TIMEOUT_S = 20.0
_URL_LINE = re.compile(rb"dashboard at (http://\S+/) ")


def screenshot_dir() -> Path:
    """Where the browser tests keep a screenshot of each page (a temporary directory; printed by the tests)."""
    directory = Path(os.environ.get("SUBAGENT_HOST_UI_SCREENSHOTS") or "/tmp/subagent-host-ui-screenshots")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def cli_env(state_dir: Path) -> dict[str, str]:
    """The console script's environment: the test's state directory, no test switches."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MOCK_") and k != "SUBAGENT_HOST_CONFIG"}
    env["SUBAGENT_HOST_STATE_DIR"] = str(state_dir)
    return env


@contextlib.contextmanager
def ui_server(state_dir: Path, *extra: str, address: str = "127.0.0.1:0") -> Generator[str]:
    """Run ``subagent-host ui`` on ``address`` until the block ends (SIGTERM, then wait); yield its URL."""
    process = subprocess.Popen(
        [CONSOLE_SCRIPT, "ui", "--http", address, "--state-dir", str(state_dir), *extra],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=cli_env(state_dir),
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = _URL_LINE.search(line)
        assert found is not None, f"ui did not start: {line!r}"
        url = found.group(1).decode()
        if address.startswith("0.0.0.0"):
            url = url.replace("0.0.0.0", "127.0.0.1")
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            status = process.wait(timeout=SERVER_START_TIMEOUT_S)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            if process.stderr is not None:
                process.stderr.close()
        assert status == 0, f"ui exited {status}"


def run_task(state_dir: Path, tmp_path: Path, task: str, provider: str = "fake", **env: str) -> dict[str, Any]:
    """Record one real run of the fake ACP agent (scripted by ``env``) as ``provider``; return ``run --json``'s
    object."""
    config = write_config(tmp_path, {provider: acp_entry(**env)})
    completed = subprocess.run(
        [CONSOLE_SCRIPT, "run", "--config", str(config), "--json", task],
        capture_output=True,
        env=cli_env(state_dir),
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    return json.loads(completed.stdout)


def start_task(state_dir: Path, tmp_path: Path, task: str, **env: str) -> subprocess.Popen[bytes]:
    """Start a run of the fake ACP agent in the background (the caller waits for it)."""
    config = write_config(tmp_path, {"fake": acp_entry(**env)})
    return subprocess.Popen(
        [CONSOLE_SCRIPT, "run", "--config", str(config), "--json", task],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=cli_env(state_dir),
        cwd=tmp_path,
    )


def write_batch(directory: Path, items: Sequence[Mapping[str, Any]], *, total: int | None = None) -> None:
    """A batch OUTDIR's ``results.jsonl`` (one line per finished item) and, with ``total``, its ``summary.json``."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps({"schema": 1, **item}) + "\n" for item in items]
    (directory / "results.jsonl").write_text("".join(lines), encoding="utf-8")
    if total is not None:
        (directory / "summary.json").write_text(json.dumps({"schema": 1, "total": total}), encoding="utf-8")


@contextlib.contextmanager
def unmarked_environment() -> Generator[None]:
    """The suite's leak marker removed from ``os.environ`` for the block (a module-long browser is no leak)."""
    marker = os.environ.pop(MARKER_NAME)
    try:
        yield
    finally:
        os.environ[MARKER_NAME] = marker


def wait_until(predicate: Any, timeout: float, interval: float = 0.05) -> bool:
    """Poll ``predicate`` until it is true or ``timeout`` passed; whether it became true."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


def digest_tree(directory: Path) -> dict[str, str]:
    """Every file under ``directory`` by its relative path, with its SHA-256 (the read-only checks compare two)."""
    found: dict[str, str] = {}
    for root, _dirs, files in os.walk(directory):
        for name in files:
            path = Path(root) / name
            found[str(path.relative_to(directory))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found
