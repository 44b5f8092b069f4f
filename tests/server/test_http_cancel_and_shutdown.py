"""Over Streamable HTTP: a call the client cancels is answered nothing and its child is torn down (a session's
``notifications/cancelled`` or ``DELETE``; at 2026-07-28, dropping the response stream), and SIGTERM with a call in
flight ends ``serve`` cleanly: exit 0, the call's stream ends with no response, and no process survives."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import psutil

from tests._provider_helpers import is_gone
from tests.server._helpers import acp_entry, write_config
from tests.server._http_helpers import HttpServer, modern_headers, modern_params, sse_messages, wait_for

# The entry's ladder is EOF 300 ms + TERM 300 ms; the rest is slack for a loaded box.
_TEARDOWN_BOUND_S = 10


def hanging_config(tmp_path: Path) -> Path:
    entry = acp_entry(
        MOCK_HANG="1", MOCK_READY_FILE=str(tmp_path / "ready"), MOCK_GRANDCHILD_PID_FILE=str(tmp_path / "grandchild")
    )
    entry["session_idle_ms"] = 0  # one-shot: a cancel climbs the ladder (a session would keep a settled child warm)
    return write_config(tmp_path, {"echo": acp_entry(), "hang": entry})


def wait_until_running(tmp_path: Path) -> tuple[int, int]:
    """(agent, grandchild) once the hanging child is ready."""
    ready = tmp_path / "ready"
    wait_for(lambda: ready.exists() and ready.read_text().strip() == "ready", 30, "the child to be ready")
    grandchild = int((tmp_path / "grandchild").read_text())
    return psutil.Process(grandchild).ppid(), grandchild


def call_message(request_id: Any, extra_params: dict[str, Any] | None = None) -> bytes:
    params = {"name": "delegate_hang", "arguments": {"task": "x"}, **(extra_params or {})}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}).encode()


def test_a_session_call_cancelled_by_notification_is_answered_nothing(tmp_path: Path) -> None:
    with HttpServer.open(hanging_config(tmp_path)) as server:
        session_id = server.initialize()
        headers = [("Mcp-Session-Id", session_id)]
        connection = server.connect()
        try:
            stream = server.send(connection, "POST", call_message(5), headers=headers)
            assert (stream.status, stream.headers["content-type"]) == (200, "text/event-stream; charset=utf-8")
            agent, grandchild = wait_until_running(tmp_path)
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}
            accepted = server.post(cancel, headers=headers)
            body = stream.read()  # the stream ends once the run is disposed
        finally:
            connection.close()
        wait_for(lambda: is_gone(agent) and is_gone(grandchild), _TEARDOWN_BOUND_S, "the child tree to end")
        after = server.post({"jsonrpc": "2.0", "id": 6, "method": "ping"}, headers=headers)
    assert (accepted.status, accepted.body) == (202, b"")
    assert sse_messages(body) == []
    assert (after.status, after.json()) == (200, {"jsonrpc": "2.0", "id": 6, "result": {}})


def test_delete_ends_the_sessions_calls_unanswered(tmp_path: Path) -> None:
    with HttpServer.open(hanging_config(tmp_path)) as server:
        session_id = server.initialize()
        headers = [("Mcp-Session-Id", session_id)]
        connection = server.connect()
        try:
            stream = server.send(connection, "POST", call_message(5), headers=headers)
            agent, grandchild = wait_until_running(tmp_path)
            deleted = server.exchange("DELETE", headers=headers)
            body = stream.read()
        finally:
            connection.close()
        wait_for(lambda: is_gone(agent) and is_gone(grandchild), _TEARDOWN_BOUND_S, "the child tree to end")
    assert (deleted.status, deleted.body) == (200, b"")
    assert sse_messages(body) == []


def test_a_modern_call_whose_stream_is_dropped_is_cancelled(tmp_path: Path) -> None:
    with HttpServer.open(hanging_config(tmp_path)) as server:
        connection = server.connect()
        try:
            body = call_message("m1", modern_params())
            server.send(connection, "POST", body, headers=modern_headers("tools/call", "delegate_hang"))
            agent, grandchild = wait_until_running(tmp_path)
        finally:
            connection.close()
        wait_for(lambda: is_gone(agent) and is_gone(grandchild), _TEARDOWN_BOUND_S, "the child tree to end")


def test_sigterm_with_a_call_in_flight_exits_0_and_leaves_nothing(tmp_path: Path) -> None:
    with HttpServer.open(hanging_config(tmp_path)) as server:
        session_id = server.initialize()
        connection = server.connect()
        try:
            stream = server.send(connection, "POST", call_message(5), headers=[("Mcp-Session-Id", session_id)])
            agent, grandchild = wait_until_running(tmp_path)
            descendants = server.descendants()
            server.process.send_signal(signal.SIGTERM)
            body = stream.read()
            returncode = server.process.wait(15)
        finally:
            connection.close()
        wait_for(lambda: all(is_gone(proc.pid) for proc in descendants), 5, "every descendant to end")
    assert returncode == 0
    assert sse_messages(body) == []  # a call in flight at shutdown gets no response
    assert is_gone(agent) and is_gone(grandchild)
