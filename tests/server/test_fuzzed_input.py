"""Bad input, fuzzed with hypothesis and bounded for 2 cores, never crashes ``serve``: random bytes, JSON values,
wrong-typed envelopes and strings of a few MiB. After each batch ``ping`` is answered; every line with an int or
str id gets exactly one response, and no response carries exception text."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.server._helpers import SERVE_TIMEOUT_S, RawServer, acp_entry, write_config

pytestmark = pytest.mark.anyio

_BATCHES = 12
_MISSING = object()
_ALLOWED_ERRORS = {"Parse error", "Invalid Request", "Method not found", "Invalid request parameters"}
_METHODS = ["ping", "tools/list", "initialize", "logging/setLevel", "no/such/method", "tools/callx", "job_output"]
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def random_bytes_line(data: bytes) -> bytes:
    return data.replace(b"\n", b" ") + b"\n"


def json_value_line(value: object) -> bytes:
    if isinstance(value, dict):
        # Ids belong to the envelopes below, which count their answers.
        items = cast("dict[str, object]", value).items()
        value = {key: item for key, item in items if key not in ("id", "result", "error")}
    return json.dumps(value).encode() + b"\n"


def envelope_line(request_id: int | str, jsonrpc: object, method: object, params: object, blob: int) -> bytes:
    fields = (("jsonrpc", jsonrpc), ("method", method), ("params", params))
    envelope: dict[str, Any] = {"id": request_id, **{key: value for key, value in fields if value is not _MISSING}}
    if blob:
        envelope["params"] = {"blob": "x" * blob}
    return json.dumps(envelope).encode() + b"\n"


_SLOW_AND_FIXTURED = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow]


@settings(max_examples=1, deadline=None, suppress_health_check=_SLOW_AND_FIXTURED)
@given(data=st.data())
async def test_bad_input_never_crashes_the_server_and_each_id_gets_one_clean_answer(
    tmp_path: Path, data: st.DataObject
) -> None:
    config = write_config(tmp_path, {"echo": acp_entry()})
    fresh_ids = itertools.count(1)
    expected: list[int | str] = []
    big_strings_left = 2
    with anyio.fail_after(SERVE_TIMEOUT_S * 2):
        async with RawServer.open(config) as server:
            await server.initialize()
            for batch in range(_BATCHES):
                lines: list[bytes] = []
                for kind in data.draw(st.lists(st.sampled_from(["bytes", "json", "envelope"]), min_size=1, max_size=8)):
                    if kind == "bytes":
                        lines.append(random_bytes_line(data.draw(st.binary(max_size=120))))
                    elif kind == "json":
                        lines.append(json_value_line(data.draw(_json_values)))
                    else:
                        number = next(fresh_ids)
                        request_id: int | str = number if data.draw(st.booleans()) else f"req-{number}"
                        blob = 0
                        if big_strings_left and data.draw(st.integers(0, 9)) == 0:
                            big_strings_left -= 1
                            blob = data.draw(st.sampled_from([1 << 20, 3 << 20]))
                        lines.append(
                            envelope_line(
                                request_id,
                                data.draw(st.sampled_from(["2.0", "1.0", 2, None, _MISSING])),
                                data.draw(st.sampled_from([*_METHODS, 5, None, _MISSING])),
                                data.draw(st.sampled_from([_MISSING, {}, [1], "x", {"name": 3}, None])),
                                blob,
                            )
                        )
                        expected.append(request_id)
                await server.send_bytes(b"".join(lines))
                await server.request(f"ping-{batch}", "ping")
                pong = await server.response_to(f"ping-{batch}")
                assert pong["result"] == {}
            # Each request runs in its own task: an answer may follow the ping sent after it.
            while any(not server.responses_for(request_id) for request_id in expected):
                await server.read()
            await server.request("last", "ping")
            await server.response_to("last")
    answered = [line for line in server.lines if "method" not in line]
    for request_id in expected:
        assert len(server.responses_for(request_id)) == 1, request_id
    for line in answered:
        if "error" in line:
            assert line["error"]["message"] in _ALLOWED_ERRORS, line
            assert "Traceback" not in json.dumps(line)
