"""Shutdown with a foreground run and a background job in flight: stdin EOF, SIGTERM, SIGINT or SIGHUP with stdin
open, and the official client's own exit. Each exits 0 within 2 s, with no child or grandchild left."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import anyio
import psutil
import pytest

from tests._provider_helpers import is_gone, wait_for_ready_marker, wait_until_gone
from tests.server._helpers import SERVE_TIMEOUT_S, RawServer, acp_entry, client_session, write_config

pytestmark = pytest.mark.anyio

SHUTDOWN_BOUND_S = 2.0
"""The official client's grace between closing stdin and SIGTERM."""


def deaf_entry(tmp_path: Path, name: str) -> dict[str, Any]:
    """A child that ignores stdin EOF (so the TERM rung ends it) and has a grandchild; graces above serve's caps."""
    entry = acp_entry(
        MOCK_HANG="1",
        MOCK_IGNORE_EOF="1",
        MOCK_READY_FILE=str(tmp_path / f"{name}.ready"),
        MOCK_GRANDCHILD_PID_FILE=str(tmp_path / f"{name}.grandchild"),
    )
    entry["dispose_eof_grace_ms"] = 6000
    entry["dispose_grace_ms"] = 3000
    return entry


def config_of(tmp_path: Path) -> Path:
    return write_config(tmp_path, {"fg": deaf_entry(tmp_path, "fg"), "bg": deaf_entry(tmp_path, "bg")})


async def tree_of(tmp_path: Path, name: str) -> list[int]:
    """The agent and grandchild pids of entry ``name``'s ready child."""
    await wait_for_ready_marker(tmp_path / f"{name}.ready")
    grandchild = int((tmp_path / f"{name}.grandchild").read_text())
    return [psutil.Process(grandchild).ppid(), grandchild]


@pytest.mark.parametrize("trigger", ["stdin-eof", "SIGTERM", "SIGINT", "SIGHUP"])
async def test_shutdown_with_runs_in_flight_exits_zero_promptly_and_leaves_no_child(
    tmp_path: Path, trigger: str
) -> None:
    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with RawServer.open(config_of(tmp_path)) as server:
            await server.initialize()
            await server.request(1, "tools/call", {"name": "delegate_fg", "arguments": {"task": "x"}})
            await server.request(
                2, "tools/call", {"name": "delegate_bg", "arguments": {"task": "x", "run_in_background": True}}
            )
            await server.response_to(2)
            pids = await tree_of(tmp_path, "fg") + await tree_of(tmp_path, "bg")
            started = anyio.current_time()
            if trigger == "stdin-eof":
                await server.close_stdin()
            else:
                server.process.send_signal(getattr(signal, trigger))
            returncode = await server.process.wait()
            elapsed = anyio.current_time() - started
    assert returncode == 0
    assert elapsed < SHUTDOWN_BOUND_S
    assert all(is_gone(pid) for pid in pids)


async def test_the_official_clients_exit_mid_run_leaves_no_child(tmp_path: Path) -> None:
    with anyio.fail_after(SERVE_TIMEOUT_S):
        async with client_session(config_of(tmp_path)) as session:
            server = next(p for p in psutil.Process().children() if "serve" in p.cmdline())
            pids: list[int] = []
            async with anyio.create_task_group() as group:

                async def call() -> None:
                    await session.call_tool("delegate_fg", {"task": "x"})

                group.start_soon(call)
                pids = await tree_of(tmp_path, "fg")
                # Leave the client with the call in flight: it closes our stdin, then waits 2 s before SIGTERM.
                group.cancel_scope.cancel()
            started = anyio.current_time()
        elapsed = anyio.current_time() - started
        for pid in [server.pid, *pids]:
            await wait_until_gone(pid)
    assert elapsed < SHUTDOWN_BOUND_S + 0.5
