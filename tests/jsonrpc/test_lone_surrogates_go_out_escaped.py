"""A lone surrogate (half of a pair a JavaScript peer split, echoed back) never breaks the JSON-RPC writer: it goes
out as its ``\\uXXXX`` escape, the line stays valid UTF-8 JSON, and the reader keeps running. Before, the encoder
raised: a handler result holding one was answered ``Internal error``, and a request whose id held one ended the
reader (and with it the task group that ran it)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from host.jsonrpc._framing import encode_message
from tests.jsonrpc._helpers import open_wire, request_into

pytestmark = pytest.mark.anyio


def test_encode_message_escapes_only_when_the_text_needs_it() -> None:
    assert encode_message({"text": "smile 😀"}) == '{"text":"smile 😀"}\n'.encode()
    line = encode_message({"text": "half \ud83d, lone \udc80"})
    assert line == b'{"text":"half \\ud83d, lone \\udc80"}\n'
    assert json.loads(line) == {"text": "half \ud83d, lone \udc80"}
    # A pair split into two strings and joined by the reader is the character again.
    assert json.loads(encode_message({"text": "\ud83d\ude00"})) == {"text": "😀"}


async def test_an_inbound_request_whose_id_holds_a_lone_surrogate_is_answered_and_the_reader_lives() -> None:
    async def echo(params: dict[str, Any]) -> object:
        return {"echo": params.get("text")}

    outcome: list[object] = []
    sent: dict[str, Any] = {}
    async with open_wire(request_handlers={"echo": echo}) as wire:
        with anyio.fail_after(5):
            await wire.remote.write(b'{"jsonrpc":"2.0","id":"\\ud800","method":"echo","params":{"text":"\\udc80"}}\n')
            first = await wire.remote.read_message()
            await wire.remote.write(b'{"jsonrpc":"2.0","id":"\\udfff","method":"nope"}\n')
            second = await wire.remote.read_message()
            async with anyio.create_task_group() as group:
                group.start_soon(request_into, outcome, wire.peer, "ours", {"sessionId": "\ud83d"})
                sent = await wire.remote.read_message()  # our request, its session id echoed back
                await wire.remote.send_json({"jsonrpc": "2.0", "id": sent["id"], "result": "\udc80"})
            assert not wire.peer.closed
    assert first == {"jsonrpc": "2.0", "id": "\ud800", "result": {"echo": "\udc80"}}
    assert second == {"jsonrpc": "2.0", "id": "\udfff", "error": {"code": -32601, "message": "Method not found"}}
    assert sent["params"] == {"sessionId": "\ud83d"}
    assert outcome == ["\udc80"]
