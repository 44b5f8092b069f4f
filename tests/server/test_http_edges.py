"""Every Streamable HTTP edge, raw over ``http.client`` against one ``serve --http`` (the console script) per module.

Each refusal has its exact status and a JSON-RPC error body with ``id: null`` and a fixed message (so no exception
text), as the MCP SDK's server answers; 2026-07-28 errors carry the request's id and the spec's status. The server
runs without the suite's leak marker (it outlives each test); the module's teardown SIGTERMs it and requires exit 0
with no descendant left.
"""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cli._helpers import cli_env
from tests.conftest import MARKER_NAME
from tests.server._helpers import acp_entry, write_config
from tests.server._http_helpers import TOKEN, HttpServer, modern_headers, modern_params, sse_messages

_LIMIT = 32 * 1024 * 1024


def refusal(message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    config = write_config(tmp_path_factory.mktemp("http-edges"), {"echo": acp_entry()})
    env = {name: value for name, value in cli_env().items() if name != MARKER_NAME}
    with HttpServer.open(config, env=env) as running:
        yield running


@pytest.fixture
def session_id(server: HttpServer) -> str:
    return server.initialize()


def in_session(session_id: str, *headers: tuple[str, str]) -> list[tuple[str, str]]:
    return [("Mcp-Session-Id", session_id), *headers]


def ping(request_id: int = 7) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "ping"}


# --- before MCP: token, DNS rebinding, Content-Type, Accept, size -------------------------------------------------


@pytest.mark.parametrize("authorization", [None, "Bearer wrong-token", f"Bearer {TOKEN}x", f"bearer{TOKEN}", TOKEN])
def test_a_request_without_the_exact_bearer_token_is_401(server: HttpServer, authorization: str | None) -> None:
    reply = server.post(ping(), authorization=authorization)
    assert (reply.status, reply.body) == (401, b"unauthorized\n")
    assert reply.headers["www-authenticate"] == "Bearer"


@pytest.mark.parametrize("host", ["evil.example", "evil.example:80", "127.0.0.1.evil.example", "localhostx"])
def test_a_host_that_is_not_loopback_is_421(server: HttpServer, host: str) -> None:
    reply = server.post(ping(), host=host)
    assert (reply.status, reply.json()) == (421, refusal("Invalid Host header"))


@pytest.mark.parametrize("origin", ["http://evil.example", "https://localhost", "null", "http://127.0.0.1.evil:1"])
def test_a_foreign_origin_is_403(server: HttpServer, origin: str) -> None:
    reply = server.post(ping(), headers=[("Origin", origin)])
    assert (reply.status, reply.json()) == (403, refusal("Invalid Origin header"))


def test_loopback_hosts_and_origins_pass(server: HttpServer) -> None:
    for host, origin in [("localhost", "http://localhost"), (f"localhost:{server.port}", "http://127.0.0.1:9")]:
        reply = server.post(ping(), host=host, headers=[("Origin", origin)])
        # Past the rebinding checks: a ping without a session is the session check's 400.
        assert (reply.status, reply.json()) == (400, refusal("Bad Request: Missing session ID"))


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
def test_a_post_that_is_not_json_is_400(server: HttpServer, content_type: str | None) -> None:
    reply = server.post(ping(), content_type=content_type)
    assert (reply.status, reply.json()) == (400, refusal("Invalid Content-Type header"))


@pytest.mark.parametrize("accept", [None, "application/json", "text/event-stream", "text/html"])
def test_a_post_that_does_not_accept_json_and_sse_is_406(server: HttpServer, accept: str | None) -> None:
    reply = server.post(ping(), accept=accept)
    message = "Not Acceptable: Client must accept both application/json and text/event-stream"
    assert (reply.status, reply.json()) == (406, refusal(message))


def test_wildcard_accept_is_enough(server: HttpServer, session_id: str) -> None:
    reply = server.post(ping(), accept="*/*", headers=in_session(session_id))
    assert (reply.status, reply.json()) == (200, {"jsonrpc": "2.0", "id": 7, "result": {}})


def test_a_declared_body_over_32_mib_is_413_before_it_is_sent(server: HttpServer) -> None:
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nAuthorization: Bearer {TOKEN}\r\n"
        f"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        f"Content-Length: {_LIMIT + 1}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as raw:
        raw.sendall(head.encode())
        answer = raw.makefile("rb").read()
    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line == b"HTTP/1.1 413 Request Entity Too Large"
    assert json.loads(rest.partition(b"\r\n\r\n")[2]) == refusal("Request body too large")


def test_a_chunked_body_over_32_mib_is_413(server: HttpServer) -> None:
    body = b" " * (_LIMIT + 1)
    connection = server.connect()
    try:
        connection.putrequest("POST", "/mcp", skip_host=True, skip_accept_encoding=True)
        for name, value in [
            ("Host", f"127.0.0.1:{server.port}"),
            ("Authorization", f"Bearer {TOKEN}"),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("Transfer-Encoding", "chunked"),
        ]:
            connection.putheader(name, value)
        connection.endheaders()
        connection.send(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
        response = connection.getresponse()
        assert (response.status, json.loads(response.read())) == (413, refusal("Request body too large"))
    finally:
        connection.close()


# --- the body: JSON, one message ----------------------------------------------------------------------------------


@pytest.mark.parametrize("body", [b"{not json", b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "x": NaN}', b"\xff"])
def test_a_body_that_is_not_json_is_a_parse_error(server: HttpServer, body: bytes) -> None:
    reply = server.exchange("POST", body)
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    assert (reply.status, reply.json()) == (400, error)


@pytest.mark.parametrize(
    "message",
    [[ping(1), ping(2)], [], 3, {"id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": [1], "method": "ping"}],
)
def test_a_batch_or_a_malformed_envelope_is_an_invalid_request(server: HttpServer, message: Any) -> None:
    reply = server.post(message)
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request"}}
    assert (reply.status, reply.json()) == (400, error)


# --- handshake-era sessions ---------------------------------------------------------------------------------------


def test_initialize_opens_a_session_with_a_visible_ascii_id(server: HttpServer) -> None:
    session_id = server.initialize()
    assert len(session_id) >= 32 and all(0x21 <= ord(c) <= 0x7E for c in session_id)
    assert server.initialize() != session_id


@pytest.mark.parametrize(
    "message",
    [ping(), {"jsonrpc": "2.0", "method": "notifications/initialized"}, {"jsonrpc": "2.0", "id": 9, "result": {}}],
)
def test_a_message_without_a_session_id_is_400_and_with_an_unknown_one_404(
    server: HttpServer, message: dict[str, Any]
) -> None:
    missing = server.post(message)
    unknown = server.post(message, headers=[("Mcp-Session-Id", "no-such-session")])
    assert (missing.status, missing.json()) == (400, refusal("Bad Request: Missing session ID"))
    assert (unknown.status, unknown.json()) == (404, refusal("Session not found"))


def test_a_session_answers_and_delete_ends_it(server: HttpServer, session_id: str) -> None:
    answered = server.post(ping(), headers=in_session(session_id))
    deleted = server.exchange("DELETE", headers=in_session(session_id))
    after = server.post(ping(), headers=in_session(session_id))
    deleted_again = server.exchange("DELETE", headers=in_session(session_id))
    no_id = server.exchange("DELETE")
    assert (answered.status, answered.json()) == (200, {"jsonrpc": "2.0", "id": 7, "result": {}})
    assert (deleted.status, deleted.body) == (200, b"")
    assert (after.status, after.json()) == (404, refusal("Session not found"))
    assert (deleted_again.status, deleted_again.json()) == (404, refusal("Session not found"))
    assert (no_id.status, no_id.json()) == (400, refusal("Bad Request: Missing session ID"))


def test_initialize_with_an_unknown_session_id_is_404(server: HttpServer) -> None:
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}
    message = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    reply = server.post(message, headers=[("Mcp-Session-Id", "no-such-session")])
    assert (reply.status, reply.json()) == (404, refusal("Session not found"))


def test_get_opens_the_sessions_notice_stream_once(server: HttpServer, session_id: str) -> None:
    first = server.connect()
    try:
        stream = server.send(
            first, "GET", headers=in_session(session_id), content_type=None, accept="text/event-stream"
        )
        second = server.exchange("GET", headers=in_session(session_id), content_type=None, accept="text/event-stream")
        assert (stream.status, stream.headers["content-type"]) == (200, "text/event-stream; charset=utf-8")
        assert stream.headers["x-accel-buffering"] == "no"
        assert (second.status, second.json()) == (409, refusal("Conflict: Only one SSE stream is allowed per session"))
        server.exchange("DELETE", headers=in_session(session_id))
        assert stream.read() == b""  # ending the session ends its stream
    finally:
        first.close()


def test_get_refusals(server: HttpServer, session_id: str) -> None:
    no_session = server.exchange("GET", content_type=None, accept="text/event-stream")
    json_only = server.exchange("GET", headers=in_session(session_id), content_type=None, accept="application/json")
    modern = server.exchange("GET", headers=modern_headers("x"), content_type=None, accept="text/event-stream")
    put = server.exchange("PUT", b"{}")
    assert (no_session.status, no_session.json()) == (400, refusal("Bad Request: Missing session ID"))
    assert (json_only.status, json_only.json()) == (
        406,
        refusal("Not Acceptable: Client must accept text/event-stream"),
    )
    assert (modern.status, modern.json(), modern.headers["allow"]) == (405, refusal("Method Not Allowed"), "POST")
    assert (put.status, put.json(), put.headers["allow"]) == (405, refusal("Method Not Allowed"), "GET, POST, DELETE")


# --- 2026-07-28: stateless requests and the header rung ------------------------------------------------------------


def modern_request(method: str, extra: dict[str, Any] | None = None, version: str = "2026-07-28") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": "m1", "method": method, "params": modern_params(extra, version)}


def mismatch(message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": "m1", "error": {"code": -32020, "message": message}}


_VERSION_MISMATCH = "mcp-protocol-version header does not match the request envelope's protocol version"
_METHOD_MISMATCH = "mcp-method header does not match the request body's method"
_NAME_MISMATCH = "mcp-name header does not match the request body's 'name' parameter"


@pytest.mark.parametrize(
    ("headers", "message"),
    [
        ([("Mcp-Method", "tools/list")], _VERSION_MISMATCH),
        (modern_headers("tools/list", version="2025-11-25"), _VERSION_MISMATCH),
        ([("MCP-Protocol-Version", "2026-07-28")], _METHOD_MISMATCH),
        (modern_headers("tools/call"), _METHOD_MISMATCH),
        (modern_headers("Tools/List"), _METHOD_MISMATCH),
        ([*modern_headers("tools/list"), ("Mcp-Method", "tools/list")], "mcp-method header appears more than once"),
        (
            [*modern_headers("tools/list"), ("MCP-Protocol-Version", "2026-07-28")],
            "mcp-protocol-version header appears more than once",
        ),
    ],
)
def test_routing_headers_that_disagree_with_the_body_are_a_header_mismatch(
    server: HttpServer, headers: list[tuple[str, str]], message: str
) -> None:
    reply = server.post(modern_request("tools/list"), headers=headers)
    assert (reply.status, reply.json()) == (400, mismatch(message))


@pytest.mark.parametrize("name_header", [None, "delegate_other", "=?base64?ZGVsZWdhdGVfZWNobw?=", "=?base64?!!?="])
def test_mcp_name_must_repeat_the_tool_name(server: HttpServer, name_header: str | None) -> None:
    body = modern_request("tools/call", {"name": "delegate_echo", "arguments": {"task": "x"}})
    reply = server.post(body, headers=modern_headers("tools/call", name_header))
    assert (reply.status, reply.json()) == (400, mismatch(_NAME_MISMATCH))


def test_a_base64_mcp_name_is_decoded_and_the_call_streams_its_answer(server: HttpServer) -> None:
    body = modern_request("tools/call", {"name": "delegate_echo", "arguments": {"task": "over http"}})
    encoded = "=?base64?" + base64.b64encode(b"delegate_echo").decode() + "?="
    reply = server.post(body, headers=modern_headers("tools/call", encoded))
    assert (reply.status, reply.headers["content-type"]) == (200, "text/event-stream; charset=utf-8")
    assert "mcp-session-id" not in reply.headers
    (message,) = sse_messages(reply.body)
    assert message["id"] == "m1" and message["result"]["content"] == [{"type": "text", "text": "over http"}]


def test_a_modern_header_routes_to_the_envelope_ladder(server: HttpServer, session_id: str) -> None:
    no_envelope = server.post(ping(), headers=modern_headers("ping"))
    # In a session too: a version the handshake era does not serve is never answered as one (the spec's 400).
    unserved = server.post(ping(), headers=[*in_session(session_id), ("MCP-Protocol-Version", "garbage")])
    unsupported = server.post(
        modern_request("tools/list", version="2099-01-01"), headers=modern_headers("tools/list", version="2099-01-01")
    )
    unknown_method = server.post(modern_request("resources/list"), headers=modern_headers("resources/list"))
    listed = server.post(modern_request("tools/list"), headers=modern_headers("tools/list"))
    envelope_message = (
        "params._meta must be an object carrying the required 'io.modelcontextprotocol/protocolVersion' and "
        "'io.modelcontextprotocol/clientCapabilities' envelope keys"
    )
    assert (no_envelope.status, no_envelope.json()) == (
        400,
        {"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": envelope_message}},
    )
    assert (unserved.status, unserved.json()["error"]["code"]) == (400, -32602)
    data = {"supported": ["2026-07-28"], "requested": "2099-01-01"}
    assert (unsupported.status, unsupported.json()) == (
        400,
        {
            "jsonrpc": "2.0",
            "id": "m1",
            "error": {"code": -32022, "message": "Unsupported protocol version", "data": data},
        },
    )
    assert (unknown_method.status, unknown_method.json()) == (
        404,
        {
            "jsonrpc": "2.0",
            "id": "m1",
            "error": {"code": -32601, "message": "Method not found", "data": "resources/list"},
        },
    )
    assert listed.status == 200 and "mcp-session-id" not in listed.headers
    assert listed.json()["result"]["resultType"] == "complete"


def test_a_modern_notification_is_acknowledged_and_dropped(server: HttpServer) -> None:
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "m1"}}
    accepted = server.post(cancel, headers=modern_headers("notifications/cancelled"))
    enveloped = server.post({**cancel, "params": modern_params({"requestId": "m1"})})
    unsupported = server.post(cancel, headers=modern_headers("notifications/cancelled", version="2099-01-01"))
    assert (accepted.status, accepted.body) == (202, b"")
    assert (enveloped.status, enveloped.body) == (202, b"")
    data = {"supported": ["2026-07-28"], "requested": "2099-01-01"}
    error = {"code": -32022, "message": "Unsupported protocol version", "data": data}
    assert (unsupported.status, unsupported.json()) == (400, {"jsonrpc": "2.0", "id": None, "error": error})


def test_no_refusal_body_carries_internal_text(server: HttpServer, session_id: str) -> None:
    """Bodies the server could be tempted to fill from an exception: hostile input of every kind."""
    bodies = [
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": 5}}',
        b"[" * 100000,
        b'"\\ud800"',
    ]
    for body in bodies:
        reply = server.exchange("POST", body, headers=in_session(session_id))
        text = reply.body.decode()
        assert not any(word in text for word in ("Traceback", "Error(", "pydantic", "line ", "column ", "validation"))
        # A tools/call is answered on its SSE stream, even when its params are bad.
        (message,) = sse_messages(reply.body) if reply.status == 200 else [reply.json()]
        assert set(message) == {"jsonrpc", "id", "error"}
        assert message["error"]["message"] in ("Invalid request parameters", "Parse error", "Invalid Request")
