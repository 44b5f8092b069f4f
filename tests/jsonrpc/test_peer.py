"""Behaviour of ``JsonRpcPeer`` over in-memory byte streams: correlation, dispatch, leniency, closure, ordering."""

from __future__ import annotations

import json
import logging
import re
import types
from typing import Any
from uuid import uuid4

import anyio
import pytest

from host._exceptions import ConnectionClosedError, LineTooLongError, PeerWriteError, ResponseError
from host.jsonrpc import MAX_LINE_BYTES, JsonRpcPeer
from tests.jsonrpc._helpers import MemoryByteReceiveStream, MemoryByteSendStream, open_wire, request_into


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def _response(request_id: object, result: object) -> bytes:
    return _line({"jsonrpc": "2.0", "id": request_id, "result": result})


def _notification(method: str, params: object) -> bytes:
    return _line({"jsonrpc": "2.0", "method": method, "params": params})


@pytest.mark.anyio
async def test_request_resolves_with_the_result_of_its_own_response_even_out_of_order() -> None:
    results: dict[str, object] = {}
    ids: dict[str, object] = {}

    async with open_wire() as wire:

        async def call(name: str) -> None:
            results[name] = await wire.peer.request(name)

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                for name in ("a", "b", "c"):
                    tg.start_soon(call, name)
                    sent = await wire.remote.read_message()
                    ids[sent["method"]] = sent["id"]
                await wire.remote.write(_response(ids["c"], "C") + _response(ids["a"], "A"))
                await wire.remote.write(_response(ids["b"], "B"))

    assert sorted(ids.values(), key=str) == [0, 1, 2]
    assert results == {"a": "A", "b": "B", "c": "C"}


@pytest.mark.anyio
async def test_request_is_written_as_one_compact_line_with_utf8_and_default_integer_ids() -> None:
    async with open_wire() as wire:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(wire.peer.request, "initialize", {"name": "é", "n": [1, 2]})
                first = await wire.remote.read_raw()
                assert (
                    first == '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"name":"é","n":[1,2]}}\n'.encode()
                )
                tg.start_soon(wire.peer.request, "session/new", types.MappingProxyType({"cwd": "/w"}))
                second = await wire.remote.read_raw()
                assert second == b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w"}}\n'
                await wire.remote.write(_response(0, None) + _response(1, None))


@pytest.mark.anyio
async def test_notify_omits_params_when_none_and_never_writes_params_null() -> None:
    async with open_wire() as wire:
        with anyio.fail_after(5):
            await wire.peer.notify("session/cancel")
            bare = await wire.remote.read_raw()
            await wire.peer.notify("session/cancel", {"sessionId": "s1"})
            with_params = await wire.remote.read_raw()

    assert bare == b'{"jsonrpc":"2.0","method":"session/cancel"}\n'
    assert with_params == b'{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}\n'


@pytest.mark.anyio
async def test_request_without_params_has_no_params_member_and_absent_result_resolves_to_none() -> None:
    outcome: list[object] = []
    async with open_wire() as wire:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(request_into, outcome, wire.peer, "shutdown")
                assert await wire.remote.read_raw() == b'{"jsonrpc":"2.0","id":0,"method":"shutdown"}\n'
                await wire.remote.write(b'{"jsonrpc":"2.0","id":0}\n')

    assert outcome == [None]


@pytest.mark.anyio
async def test_notifications_reach_the_callback_with_params_defaulting_to_an_empty_object() -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    async with open_wire(on_notification=lambda method, params: seen.append((method, params))) as wire:
        with anyio.fail_after(5):
            await wire.remote.write(_notification("session/update", {"update": {"sessionUpdate": "plan"}}))
            await wire.remote.write(b'{"jsonrpc":"2.0","method":"no-params"}\n')
            await wire.remote.write(_notification("list-params", [1, 2]))
            await wire.remote.write(_notification("null-params", None))
            await wire.remote.write(b'{"jsonrpc":"2.0","method":"null-id","id":null}\n')
            await wire.remote.write(b' \t{"jsonrpc":"2.0","method":"padded"} \r\n')
            await anyio.wait_all_tasks_blocked()

    assert seen == [
        ("session/update", {"update": {"sessionUpdate": "plan"}}),
        ("no-params", {}),
        ("list-params", {}),
        ("null-params", {}),
        ("null-id", {}),
        ("padded", {}),
    ]


@pytest.mark.anyio
async def test_unknown_notifications_are_dropped_without_a_callback() -> None:
    async with open_wire() as wire:
        with anyio.fail_after(5):
            await wire.remote.write(_notification("_vendor/extension", {"x": 1}))
            await anyio.wait_all_tasks_blocked()
            assert not wire.peer.closed


@pytest.mark.anyio
async def test_a_raising_notification_callback_is_contained_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[str] = []

    def on_notification(method: str, params: dict[str, Any]) -> None:
        seen.append(method)
        if method == "bad":
            raise RuntimeError("observer bug")

    async with open_wire(on_notification=on_notification) as wire:
        with anyio.fail_after(5):
            await wire.remote.write(_notification("bad", {}) + _notification("good", {}))
            await anyio.wait_all_tasks_blocked()

    assert seen == ["bad", "good"]
    assert any(record.levelno == logging.ERROR and record.exc_info for record in caplog.records)


@pytest.mark.anyio
async def test_unknown_inbound_method_is_answered_method_not_found_by_default() -> None:
    async with open_wire() as wire:
        with anyio.fail_after(5):
            await wire.remote.write(b'{"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{"path":"/x"}}\n')
            answer = await wire.remote.read_raw()

    assert answer == b'{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found"}}\n'


@pytest.mark.anyio
async def test_unknown_inbound_method_uses_the_supplied_method_not_found_text() -> None:
    async with open_wire(method_not_found=lambda method: f"method not found: {method}") as wire:
        with anyio.fail_after(5):
            await wire.remote.write(b'{"jsonrpc":"2.0","id":"r1","method":"host/ask"}\n')
            answer = await wire.remote.read_raw()

    assert answer == b'{"jsonrpc":"2.0","id":"r1","error":{"code":-32601,"message":"method not found: host/ask"}}\n'


@pytest.mark.anyio
async def test_inbound_request_is_answered_with_the_handler_result_and_object_params() -> None:
    received: list[dict[str, Any]] = []

    async def permission(params: dict[str, Any]) -> object:
        received.append(params)
        return {"outcome": {"outcome": "selected", "optionId": "allow"}}

    async with open_wire(request_handlers={"session/request_permission": permission}) as wire:
        with anyio.fail_after(5):
            await wire.remote.write(_line({"jsonrpc": "2.0", "id": 3, "method": "session/request_permission"}))
            first = await wire.remote.read_raw()
            await wire.remote.write(
                _line({"jsonrpc": "2.0", "id": 4, "method": "session/request_permission", "params": {"a": 1}})
            )
            second = await wire.remote.read_message()
            await wire.remote.write(
                _line({"jsonrpc": "2.0", "id": 5, "method": "session/request_permission", "params": "nope"})
            )
            await wire.remote.read_message()

    assert first == (b'{"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}\n')
    assert second["id"] == 4
    assert received == [{}, {"a": 1}, {}]


@pytest.mark.anyio
async def test_a_failing_handler_is_answered_internal_error_without_traceback_or_data(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def explode(params: dict[str, Any]) -> object:
        raise RuntimeError("SECRET_TOKEN in /private/path")

    async with open_wire(request_handlers={"boom": explode}) as wire:
        with anyio.fail_after(5):
            await wire.remote.write(b'{"jsonrpc":"2.0","id":1,"method":"boom"}\n')
            answer = await wire.remote.read_raw()

    assert answer == b'{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error"}}\n'
    assert any(record.exc_info for record in caplog.records)


@pytest.mark.anyio
async def test_a_handler_result_that_is_not_json_is_answered_internal_error_once() -> None:
    async def unencodable(params: dict[str, Any]) -> object:
        return {"value": object()}

    async def not_a_number(params: dict[str, Any]) -> object:
        return float("nan")

    async with open_wire(request_handlers={"odd": unencodable, "nan": not_a_number}) as wire:
        with anyio.fail_after(5):
            await wire.remote.write(b'{"jsonrpc":"2.0","id":1,"method":"odd"}\n')
            first = await wire.remote.read_raw()
            await wire.remote.write(b'{"jsonrpc":"2.0","id":2,"method":"nan"}\n')
            second = await wire.remote.read_raw()
            await anyio.wait_all_tasks_blocked()
            assert wire.remote.from_peer.statistics().current_buffer_used == 0

    assert first == b'{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error"}}\n'
    assert second == b'{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Internal error"}}\n'


@pytest.mark.anyio
async def test_inbound_request_ids_are_a_separate_space_from_ours() -> None:
    async def ping(params: dict[str, Any]) -> object:
        return "pong"

    outcome: list[object] = []
    async with open_wire(request_handlers={"ping": ping}) as wire:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(request_into, outcome, wire.peer, "initialize")
                assert (await wire.remote.read_message())["id"] == 0
                await wire.remote.write(b'{"jsonrpc":"2.0","id":0,"method":"ping"}\n')
                assert await wire.remote.read_raw() == b'{"jsonrpc":"2.0","id":0,"result":"pong"}\n'
                await anyio.wait_all_tasks_blocked()
                assert outcome == []
                await wire.remote.write(_response(0, "initialized"))

    assert outcome == ["initialized"]


GARBAGE = [
    pytest.param(b"\n", id="empty-line"),
    pytest.param(b"   \t \r\n", id="blank-line"),
    pytest.param(b'\xff\xfe{"jsonrpc":"2.0","method":"x"}\n', id="invalid-utf8"),
    pytest.param(b'{"jsonrpc":"2.0","method":"x","params":{"s":"\xed\xa0\x80"}}\n', id="encoded-surrogate"),
    pytest.param(b'{"jsonrpc":"2.0",\n', id="not-json"),
    pytest.param(b'{"jsonrpc":"2.0","method":"x"} {"jsonrpc":"2.0","method":"y"}\n', id="two-values-on-one-line"),
    pytest.param(b'{"jsonrpc":"2.0","method":"x","params":{"v":NaN}}\n', id="nan"),
    pytest.param(b'{"jsonrpc":"2.0","method":"x","params":{"v":Infinity}}\n', id="infinity"),
    pytest.param(b'{"jsonrpc":"2.0","method":"x","params":{"v":-Infinity}}\n', id="minus-infinity"),
    pytest.param(b'[{"jsonrpc":"2.0","method":"x"}]\n', id="batch"),
    pytest.param(b'"a string"\n', id="string"),
    pytest.param(b"42\n", id="number"),
    pytest.param(b"null\n", id="null"),
    pytest.param(b"[" * 100_000 + b"\n", id="absurd-nesting"),
    pytest.param(b'{"jsonrpc":"2.0","id":99,"result":"wrong"}\n', id="unknown-id"),
    pytest.param(b'{"jsonrpc":"2.0","id":false,"result":"wrong"}\n', id="bool-id-aliasing-0"),
    pytest.param(b'{"jsonrpc":"2.0","id":0.0,"result":"wrong"}\n', id="float-id"),
    pytest.param(b'{"jsonrpc":"2.0","id":"0","result":"wrong"}\n', id="string-id-for-int"),
    pytest.param(b'{"jsonrpc":"2.0","method":5,"params":{}}\n', id="method-not-string"),
    pytest.param(b'{"jsonrpc":"2.0","id":3,"method":["x"]}\n', id="request-method-not-string"),
    pytest.param(b'{"jsonrpc":"2.0","result":"wrong"}\n', id="neither-method-nor-id"),
]


@pytest.mark.anyio
@pytest.mark.parametrize("garbage", GARBAGE)
async def test_garbage_is_skipped_and_the_next_valid_messages_are_still_processed(garbage: bytes) -> None:
    seen: list[str] = []
    outcome: list[object] = []

    async with open_wire(on_notification=lambda method, params: seen.append(method)) as wire:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(request_into, outcome, wire.peer, "session/prompt")
                await wire.remote.read_message()
                await wire.remote.write(garbage)
                await wire.remote.write(_notification("after", {}))
                await wire.remote.write(_response(0, "right"))
            assert not wire.peer.closed
            # Nothing was written back: garbage is never answered.
            assert wire.remote.from_peer.statistics().current_buffer_used == 0

    assert seen == ["after"]
    assert outcome == ["right"]


@pytest.mark.anyio
async def test_a_bool_id_never_resolves_the_request_it_would_alias() -> None:
    outcome: list[object] = []
    async with open_wire() as wire:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(wire.peer.request, "first")
                await wire.remote.read_message()
                tg.start_soon(request_into, outcome, wire.peer, "second")
                assert (await wire.remote.read_message())["id"] == 1
                await wire.remote.write(b'{"jsonrpc":"2.0","id":true,"result":"aliased"}\n')
                await anyio.wait_all_tasks_blocked()
                assert outcome == []
                await wire.remote.write(_response(1, "real") + _response(0, None))

    assert outcome == ["real"]


@pytest.mark.anyio
async def test_a_duplicate_or_late_response_is_ignored() -> None:
    outcome: list[object] = []
    async with open_wire() as wire:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(request_into, outcome, wire.peer, "m")
                await wire.remote.read_message()
                await wire.remote.write(_response(0, "first") + _response(0, "second"))
            await anyio.wait_all_tasks_blocked()
            assert not wire.peer.closed

    assert outcome == ["first"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("error", "code", "message", "data"),
    [
        pytest.param({"code": 7, "message": "scripted", "data": {"hint": "fake"}}, 7, "scripted", {"hint": "fake"}),
        pytest.param({"code": -32601, "message": ""}, -32601, "", None, id="empty-message"),
        pytest.param("oops", None, "JSON-RPC error", None, id="not-an-object"),
        pytest.param([1], None, "JSON-RPC error", None, id="array"),
        pytest.param({"code": True, "message": 5, "data": [1]}, None, "JSON-RPC error", [1], id="bool-code"),
        pytest.param({"code": 1.5}, None, "JSON-RPC error", None, id="float-code"),
        pytest.param({"code": "7", "message": "m"}, None, "m", None, id="string-code"),
    ],
)
async def test_an_error_response_fails_the_request_with_response_error(
    error: object, code: int | None, message: str, data: object
) -> None:
    failures: list[ResponseError] = []
    async with open_wire() as wire:

        async def call() -> None:
            with pytest.raises(ResponseError) as caught:
                await wire.peer.request("initialize")
            failures.append(caught.value)

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await wire.remote.read_message()
                await wire.remote.write(_line({"jsonrpc": "2.0", "id": 0, "error": error}))

    assert [(failure.code, failure.message, failure.data) for failure in failures] == [(code, message, data)]


@pytest.mark.anyio
async def test_a_null_error_member_counts_as_absent() -> None:
    outcome: list[object] = []
    async with open_wire() as wire:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(request_into, outcome, wire.peer, "m")
                await wire.remote.read_message()
                await wire.remote.write(b'{"jsonrpc":"2.0","id":0,"result":3,"error":null}\n')

    assert outcome == [3]


@pytest.mark.anyio
async def test_string_ids_mode_sends_req_hex_ids_and_correlates_by_string() -> None:
    outcome: list[object] = []
    empty: dict[str, object] = {}
    async with open_wire(next_id=lambda: f"req_{uuid4().hex}") as wire:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(request_into, outcome, wire.peer, "initialize", empty)
                sent = await wire.remote.read_message()
                assert re.fullmatch(r"req_[0-9a-f]{32}", sent["id"])
                await wire.remote.write(_response(0, "int id is not ours"))
                await anyio.wait_all_tasks_blocked()
                assert outcome == []
                await wire.remote.write(_response(sent["id"], {"serverInfo": {"name": "fake"}}))

    assert outcome == [{"serverInfo": {"name": "fake"}}]


@pytest.mark.anyio
async def test_a_notification_read_before_a_response_is_handled_before_the_waiter_wakes() -> None:
    events: list[str] = []
    async with open_wire(on_notification=lambda method, params: events.append(f"update {params['n']}")) as wire:

        async def call() -> None:
            result = await wire.peer.request("session/prompt")
            events.append(f"result {result}")

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await wire.remote.read_message()
                # One chunk, so the reader holds every line before the waiter could possibly run.
                await wire.remote.write(
                    _notification("session/update", {"n": 1})
                    + _notification("session/update", {"n": 2})
                    + _response(0, "end_turn")
                )

    assert events == ["update 1", "update 2", "result end_turn"]


@pytest.mark.anyio
async def test_eof_fails_pending_requests_and_later_ones_at_once() -> None:
    async with open_wire() as wire:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(wire.remote.read_message)
                tg.start_soon(wire.remote.read_message)

                async def expect_closed() -> None:
                    with pytest.raises(ConnectionClosedError, match=r"^JSON-RPC input closed$"):
                        await wire.peer.request("a")

                tg.start_soon(expect_closed)
                tg.start_soon(expect_closed)
                await anyio.wait_all_tasks_blocked()
                wire.remote.eof()
            await wire.peer.wait_closed()
            assert wire.peer.closed
            assert wire.peer.close_reason == "eof"
            with pytest.raises(ConnectionClosedError, match=r"^JSON-RPC input closed$"):
                await wire.peer.request("later")
            assert len(wire.peer._pending) == 0


@pytest.mark.anyio
async def test_a_final_fragment_without_newline_at_eof_is_discarded() -> None:
    seen: list[str] = []
    async with open_wire(on_notification=lambda method, params: seen.append(method)) as wire:
        with anyio.fail_after(5):
            await wire.remote.write(_notification("complete", {}) + b'{"jsonrpc":"2.0","method":"fragment"}')
            wire.remote.eof()
            await wire.peer.wait_closed()

    assert seen == ["complete"]
    assert wire.peer.close_reason == "eof"


@pytest.mark.anyio
@pytest.mark.parametrize(
    "chunks",
    [
        pytest.param([b"x" * 65], id="unterminated"),
        pytest.param([b"x" * 65 + b"\n"], id="terminated-in-one-chunk"),
        pytest.param([b"x" * 40, b"x" * 40], id="across-chunks"),
    ],
)
async def test_an_over_long_line_closes_the_connection_and_fails_pending_requests(chunks: list[bytes]) -> None:
    failures: list[ConnectionClosedError] = []
    async with open_wire(max_line_bytes=64) as wire:

        async def call() -> None:
            with pytest.raises(ConnectionClosedError) as caught:
                await wire.peer.request("session/prompt")
            failures.append(caught.value)

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await wire.remote.read_message()
                for chunk in chunks:
                    await wire.remote.write(chunk)
            await wire.peer.wait_closed()
            assert wire.peer.close_reason == "line-too-long"
            with pytest.raises(ConnectionClosedError):
                await wire.peer.request("later")
            # The reader closed its end, so a peer still writing sees a broken pipe rather than a stall.
            with pytest.raises(anyio.BrokenResourceError):
                await wire.remote.write(b"more\n")

    assert len(failures) == 1
    assert isinstance(failures[0].__cause__, LineTooLongError)


@pytest.mark.anyio
async def test_a_line_of_exactly_max_line_bytes_is_delivered() -> None:
    seen: list[dict[str, Any]] = []
    prefix = b'{"jsonrpc":"2.0","method":"m","params":{"t":"'
    suffix = b'"}}'
    line = prefix + b"y" * (64 - len(prefix) - len(suffix)) + suffix
    assert len(line) == 64
    async with open_wire(max_line_bytes=64, on_notification=lambda method, params: seen.append(params)) as wire:
        with anyio.fail_after(5):
            await wire.remote.write(line + b"\n")
            await anyio.wait_all_tasks_blocked()
            assert not wire.peer.closed

    assert len(seen) == 1


@pytest.mark.anyio
async def test_an_8_mib_line_within_the_default_bound_is_delivered() -> None:
    text = "z" * (8 * 1024 * 1024)
    seen: list[dict[str, Any]] = []
    async with open_wire(on_notification=lambda method, params: seen.append(params)) as wire:
        with anyio.fail_after(5):
            await wire.remote.write(_notification("session/update", {"text": text}))
            await anyio.wait_all_tasks_blocked()
            assert not wire.peer.closed

    assert len(seen) == 1
    assert seen[0]["text"] == text


@pytest.mark.anyio
async def test_a_cancelled_request_leaves_no_pending_entry_and_its_late_response_is_dropped() -> None:
    outcome: list[object] = []
    async with open_wire() as wire:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(wire.peer.request, "slow")
                assert (await wire.remote.read_message())["id"] == 0
                tg.cancel_scope.cancel()
            assert len(wire.peer._pending) == 0
            await wire.remote.write(_response(0, "late"))
            async with anyio.create_task_group() as tg:
                tg.start_soon(request_into, outcome, wire.peer, "next")
                assert (await wire.remote.read_message())["id"] == 1
                await wire.remote.write(_response(1, "fresh"))
            assert len(wire.peer._pending) == 0
            assert not wire.peer.closed

    assert outcome == ["fresh"]


@pytest.mark.anyio
async def test_writes_after_the_peer_stopped_reading_raise_peer_write_error() -> None:
    async with open_wire() as wire:
        wire.remote.from_peer.close()
        with anyio.fail_after(5):
            with pytest.raises(PeerWriteError) as caught:
                await wire.peer.notify("session/cancel", {"sessionId": "s"})
            assert isinstance(caught.value.__cause__, anyio.BrokenResourceError)
            with pytest.raises(PeerWriteError):
                await wire.peer.request("session/prompt")
            assert len(wire.peer._pending) == 0
            assert not wire.peer.closed


@pytest.mark.anyio
async def test_an_unencodable_request_raises_and_leaves_nothing_pending() -> None:
    async with open_wire() as wire:
        with anyio.fail_after(5):
            with pytest.raises(TypeError):
                await wire.peer.request("m", {"x": object()})
            assert len(wire.peer._pending) == 0


@pytest.mark.anyio
async def test_close_fails_pending_requests_and_is_idempotent() -> None:
    async with open_wire() as wire:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(wire.remote.read_message)

                async def expect_closed() -> None:
                    with pytest.raises(ConnectionClosedError, match=r"^JSON-RPC transport closed$"):
                        await wire.peer.request("a")

                tg.start_soon(expect_closed)
                await anyio.wait_all_tasks_blocked()
                wire.peer.close()
                wire.peer.close()
            await wire.peer.wait_closed()
            assert wire.peer.closed
            assert wire.peer.close_reason == "closed"
            with pytest.raises(ConnectionClosedError):
                await wire.peer.request("later")


@pytest.mark.anyio
async def test_close_keeps_the_first_reason() -> None:
    async with open_wire() as wire:
        with anyio.fail_after(5):
            wire.remote.eof()
            await wire.peer.wait_closed()
            wire.peer.close()
            assert wire.peer.close_reason == "eof"


@pytest.mark.anyio
async def test_close_from_a_notification_callback_stops_reading_buffered_lines() -> None:
    seen: list[str] = []
    peers: list[JsonRpcPeer] = []

    def on_notification(method: str, params: dict[str, Any]) -> None:
        seen.append(method)
        peers[0].close()

    async with open_wire(on_notification=on_notification) as wire:
        peers.append(wire.peer)
        with anyio.fail_after(5):
            await wire.remote.write(_notification("first", {}) + _notification("second", {}))
            await wire.peer.wait_closed()

    assert seen == ["first"]


@pytest.mark.anyio
async def test_close_before_run_makes_run_return_at_once() -> None:
    to_peer_send, to_peer_receive = anyio.create_memory_object_stream[bytes](1)
    from_peer_send, from_peer_receive = anyio.create_memory_object_stream[bytes](1)
    with to_peer_send, to_peer_receive, from_peer_send, from_peer_receive:
        peer = JsonRpcPeer(send=MemoryByteSendStream(from_peer_send), receive=MemoryByteReceiveStream(to_peer_receive))
        peer.close()
        with anyio.fail_after(5):
            await peer.wait_closed()
            await peer.run()
            with pytest.raises(RuntimeError):
                await peer.run()
        assert peer.close_reason == "closed"


def test_the_default_line_bound_is_32_mib() -> None:
    assert MAX_LINE_BYTES == 32 * 1024 * 1024


@pytest.mark.anyio
async def test_the_response_hook_runs_inline_before_any_later_line_is_handled() -> None:
    events: list[str] = []

    async with open_wire(on_notification=lambda method, params: events.append(f"notification {method}")) as wire:
        result: list[object] = []

        async def call() -> None:
            result.append(await wire.peer.request("prompt", on_response=lambda value: events.append(f"hook {value}")))

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                sent = await wire.remote.read_message()
                # The response and a late notification arrive in one read: the hook must see the response first.
                await wire.remote.write(_response(sent["id"], "done") + _notification("late", {}))
                await wire.remote.write(_notification("later", {}))

    assert events == ["hook done", "notification late", "notification later"]
    assert result == ["done"]


@pytest.mark.anyio
async def test_the_response_hook_receives_the_error_and_a_raising_hook_is_contained(
    caplog: pytest.LogCaptureFixture,
) -> None:
    seen: list[object] = []

    def hook(value: object) -> None:
        seen.append(value)
        raise RuntimeError("hook bug")

    async with open_wire() as wire:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:

                async def call() -> None:
                    with pytest.raises(ResponseError):
                        await wire.peer.request("prompt", on_response=hook)

                tg.start_soon(call)
                sent = await wire.remote.read_message()
                await wire.remote.write(
                    _line({"jsonrpc": "2.0", "id": sent["id"], "error": {"code": 1, "message": "x"}})
                )

    assert len(seen) == 1 and isinstance(seen[0], ResponseError)
    assert "JSON-RPC response hook failed" in caplog.text
