"""``serve``'s teardown graces: a client's cancel climbs the entry's own ladder; once shutdown begins every teardown
is capped (EOF 500 ms, SIGTERM → SIGKILL 1000 ms), a ladder already part-way included; a signal during shutdown
ends the EOF wait at once but never skips the SIGTERM → SIGKILL rung."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from tests._provider_helpers import is_gone, wait_for_file, wait_for_ready_marker, wait_until_gone
from tests.conftest import FAKE_DSH_RUNTIME, PYTHON
from tests.server._helpers import SERVE_TIMEOUT_S, RawServer, acp_entry, write_config

pytestmark = pytest.mark.anyio

SHUTDOWN_BOUND_S = 2.0
"""The official client's grace between closing stdin and SIGTERM."""
TERM_GRACE_MS = 2500
"""The trapping entry's own SIGTERM → SIGKILL grace, above serve's 1000 ms shutdown cap."""
EOF_GRACE_MS = 100
LADDER_SLACK_S = 2.0
"""Slack for a loaded 2-core box on top of a ladder's graces."""


def entry_of(tmp_path: Path, name: str, *, eof_grace_ms: float, grace_ms: float, **env: str) -> dict[str, Any]:
    entry = acp_entry(
        MOCK_HANG="1",
        MOCK_READY_FILE=str(tmp_path / f"{name}.ready"),
        MOCK_GRANDCHILD_PID_FILE=str(tmp_path / f"{name}.grandchild"),
        **env,
    )
    entry["dispose_eof_grace_ms"] = eof_grace_ms
    entry["dispose_grace_ms"] = grace_ms
    entry["session_idle_ms"] = 0  # one-shot: a cancel climbs the ladder (a session would keep a settled child warm)
    return entry


def trap_config(tmp_path: Path) -> Path:
    """A child that ignores stdin EOF and SIGTERM (only SIGKILL ends it; each SIGTERM is noted in ``trap.sigterm``),
    with a TERM grace above the cap."""
    trap = entry_of(
        tmp_path,
        "trap",
        eof_grace_ms=EOF_GRACE_MS,
        grace_ms=TERM_GRACE_MS,
        MOCK_TRAP_SIGTERM="1",
        MOCK_SIGTERM_FILE=str(tmp_path / "trap.sigterm"),
    )
    return write_config(tmp_path, {"trap": trap})


async def tree_of(tmp_path: Path, name: str) -> list[int]:
    """The agent and grandchild pids of entry ``name``'s ready child."""
    await wait_for_ready_marker(tmp_path / f"{name}.ready")
    grandchild = int((tmp_path / f"{name}.grandchild").read_text())
    return [psutil.Process(grandchild).ppid(), grandchild]


async def start_call(server: RawServer, request_id: int, name: str) -> None:
    await server.request(request_id, "tools/call", {"name": f"delegate_{name}", "arguments": {"task": "x"}})


async def cancel(server: RawServer, request_id: int) -> None:
    await server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}})


async def gone_after(pids: list[int], since: float) -> float:
    """Seconds from ``since`` until every pid is gone."""
    for pid in pids:
        await wait_until_gone(pid)
    return anyio.current_time() - since


async def test_a_cancel_waits_the_entrys_own_grace_and_shutdown_cuts_a_ladder_part_way_to_the_cap(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with RawServer.open(trap_config(tmp_path)) as server:
            await server.initialize()
            await start_call(server, 1, "trap")
            pids = await tree_of(tmp_path, "trap")
            cancelled_at = anyio.current_time()
            await cancel(server, 1)
            own_grace_s = await gone_after(pids, cancelled_at)
            (tmp_path / "trap.ready").unlink()
            (tmp_path / "trap.sigterm").unlink()
            await start_call(server, 2, "trap")
            pids = await tree_of(tmp_path, "trap")
            cancelled_at = anyio.current_time()
            await cancel(server, 2)
            # Past the 100 ms EOF rung: the 2500 ms SIGTERM rung is waiting when shutdown begins.
            await wait_for_file(tmp_path / "trap.sigterm")
            await server.close_stdin()
            cut_s = await gone_after(pids, cancelled_at)
            returncode = await server.process.wait()
            exited_s = anyio.current_time() - cancelled_at
    # A client's cancel: SIGKILL only after the configured 2500 ms, not serve's 1000 ms shutdown cap; still bounded.
    assert TERM_GRACE_MS / 1000 <= own_grace_s < (EOF_GRACE_MS + TERM_GRACE_MS) / 1000 + LADDER_SLACK_S
    # Shutdown cut the waiting rung to 1000 ms after it began (about 1.1 s after the cancel), not 2500 ms.
    assert cut_s < TERM_GRACE_MS / 1000
    assert returncode == 0
    assert exited_s < 0.4 + SHUTDOWN_BOUND_S


async def test_a_second_signal_ends_the_eof_wait_at_once_and_a_sigterm_trap_is_killed_after_the_capped_grace(
    tmp_path: Path,
) -> None:
    sigterm_file = tmp_path / "deaf.sigterm"
    deaf = entry_of(
        tmp_path, "deaf", eof_grace_ms=500, grace_ms=1000, MOCK_IGNORE_EOF="1", MOCK_SIGTERM_FILE=str(sigterm_file)
    )
    # Its own TERM grace (2500 ms) would not fit the 2 s budget: shutdown caps it at 1000 ms.
    trap = entry_of(tmp_path, "trap", eof_grace_ms=500, grace_ms=TERM_GRACE_MS, MOCK_TRAP_SIGTERM="1")
    config = write_config(tmp_path, {"deaf": deaf, "trap": trap})
    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with RawServer.open(config) as server:
            await server.initialize()
            await start_call(server, 1, "deaf")
            await start_call(server, 2, "trap")
            deaf_pids = await tree_of(tmp_path, "deaf")
            trap_pids = await tree_of(tmp_path, "trap")
            started = anyio.current_time()
            server.process.send_signal(signal.SIGTERM)
            await anyio.sleep(0.05)
            server.process.send_signal(signal.SIGINT)
            deaf_s = await gone_after(deaf_pids, started)
            returncode = await server.process.wait()
            elapsed = anyio.current_time() - started
    # Without the second signal the EOF-deaf child would get its SIGTERM only after the 500 ms EOF grace.
    assert deaf_s < 0.5
    assert sigterm_file.exists()  # ended by SIGTERM: the SIGTERM rung was not skipped
    assert returncode == 0
    assert elapsed < SHUTDOWN_BOUND_S
    assert all(is_gone(pid) for pid in trap_pids)


async def test_shutdown_caps_a_dsh_sdk_runtimes_unanswered_shutdown_request_like_the_eof_rung(tmp_path: Path) -> None:
    init_file = tmp_path / "sdk.init"
    sdk = {
        "kind": "dsh-sdk",
        "command": PYTHON,
        "args": [str(FAKE_DSH_RUNTIME)],
        # Its own bound on the unanswered `shutdown` request (5 s) would not fit the 2 s an MCP client waits.
        "shutdown_timeout_ms": 5000,
        "env": {"FAKE_HANG_PROMPT": "1", "FAKE_IGNORE_SHUTDOWN": "1", "FAKE_RECORD_INIT": str(init_file)},
    }
    config = write_config(tmp_path, {"sdk": sdk})
    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with RawServer.open(config) as server:
            await server.initialize()
            await start_call(server, 1, "sdk")
            await wait_for_file(init_file)
            runtimes = [proc.pid for proc in psutil.Process(server.process.pid).children()]
            started = anyio.current_time()
            await server.close_stdin()
            returncode = await server.process.wait()
            elapsed = anyio.current_time() - started
    assert returncode == 0
    assert elapsed < SHUTDOWN_BOUND_S
    assert runtimes and all(is_gone(pid) for pid in runtimes)
