"""``JsonRpcPeer`` over real pipes to a stdlib child (``pipe_child.py``)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process

from host._exceptions import ConnectionClosedError, PeerWriteError
from host.jsonrpc import JsonRpcPeer
from host.jsonrpc._peer import RequestHandler
from tests.conftest import PYTHON

CHILD = Path(__file__).with_name("pipe_child.py")
# Real children pay an interpreter cold start on a loaded 2-core runner, hence a wider bound than the standard 5 s.
PROCESS_TIMEOUT = 20


@asynccontextmanager
async def open_child_peer(
    *,
    request_handlers: dict[str, RequestHandler] | None = None,
    on_notification: Callable[[str, dict[str, Any]], None] | None = None,
) -> AsyncGenerator[tuple[JsonRpcPeer, Process]]:
    """Spawn the child, run a peer on its stdio, and on exit kill and reap it (shielded and bounded)."""
    process = await anyio.open_process([PYTHON, str(CHILD)])
    try:
        assert process.stdin is not None
        assert process.stdout is not None
        peer = JsonRpcPeer(
            send=process.stdin,
            receive=process.stdout,
            request_handlers=request_handlers,
            on_notification=on_notification,
        )
        async with anyio.create_task_group() as tg:
            tg.start_soon(peer.run)
            try:
                yield peer, process
            finally:
                peer.close()
    finally:
        with anyio.move_on_after(PROCESS_TIMEOUT, shield=True):
            if process.returncode is None:
                process.kill()
            await process.aclose()


@pytest.mark.anyio
async def test_requests_round_trip_through_a_real_child_in_order() -> None:
    progress: list[dict[str, Any]] = []
    async with open_child_peer(on_notification=lambda method, params: progress.append(params)) as (peer, _):
        with anyio.fail_after(PROCESS_TIMEOUT):
            assert await peer.request("echo", {"text": "héllo"}) == {"text": "héllo"}
            assert await peer.request("notify_then_answer") == "done"
            assert progress == [{"step": 1}]


@pytest.mark.anyio
async def test_a_child_request_is_answered_by_the_handler_over_the_pipe() -> None:
    async def question(params: dict[str, Any]) -> object:
        return {"answer": params["q"] * 2}

    async with open_child_peer(request_handlers={"host/question": question}) as (peer, _):
        with anyio.fail_after(PROCESS_TIMEOUT):
            reply = await peer.request("ask", {"q": 21})

    assert reply == {"jsonrpc": "2.0", "id": "child-1", "result": {"answer": 42}}


@pytest.mark.anyio
async def test_an_8_mib_message_crosses_the_pipe_both_ways() -> None:
    text = "q" * (8 * 1024 * 1024)
    async with open_child_peer() as (peer, _):
        with anyio.fail_after(PROCESS_TIMEOUT):
            assert await peer.request("echo", {"text": text}) == {"text": text}


@pytest.mark.anyio
async def test_child_exit_fails_the_pending_request_with_connection_closed() -> None:
    async with open_child_peer() as (peer, process):
        with anyio.fail_after(PROCESS_TIMEOUT):
            with pytest.raises(ConnectionClosedError):
                await peer.request("exit")
            await peer.wait_closed()
            assert peer.close_reason == "eof"
            assert await process.wait() == 0


@pytest.mark.anyio
async def test_writes_after_the_child_closed_its_stdin_raise_peer_write_error() -> None:
    stdin_closed = anyio.Event()

    def on_notification(method: str, params: dict[str, Any]) -> None:
        if method == "stdin_closed":
            stdin_closed.set()

    async with open_child_peer(on_notification=on_notification) as (peer, _):
        with anyio.fail_after(PROCESS_TIMEOUT):
            async with anyio.create_task_group() as tg:
                # The child never answers this one; the peer's close() on exit fails it.
                async def expect_closed() -> None:
                    with pytest.raises(ConnectionClosedError):
                        await peer.request("close_stdin")

                tg.start_soon(expect_closed)
                await stdin_closed.wait()
                with pytest.raises(PeerWriteError):
                    await peer.notify("session/cancel", {"sessionId": "s"})
                with pytest.raises(PeerWriteError):
                    await peer.request("echo", {})
                assert len(peer._pending) == 1
                peer.close()
