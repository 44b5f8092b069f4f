"""Pure mappings: turn-end reasons (A1–A3), classification by class (A4), event validation texts (F17), the fold
and the per-run route."""

from __future__ import annotations

from typing import Any

import pytest

from host._exceptions import (
    JsonRpcResponseError,
    RequestTimeoutError,
    SdkProtocolError,
    TransportClosedError,
)
from host.run._contracts import AgentOptions
from host.sdk_provider._mapping import OutputFold, classify_error, delta_text, map_turn_end, result_of_turn_end
from host.sdk_provider._run import resolve_route
from host.sdk_provider.client import SdkRunSpec
from host.sdk_provider.client._validation import (
    MAX_CONTENT_DEPTH,
    is_receipt,
    message_id_of,
    server_info_of,
    validate_event,
)
from tests.sdk_provider._helpers import D


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        ({"kind": "completed"}, ("completed", None)),
        ({"kind": "max-tokens"}, ("max-tokens", None)),
        ({"kind": "aborted", "reason": {"kind": "user"}}, ("aborted", None)),
        ({"kind": "aborted", "reason": {"kind": "disposed"}}, ("aborted", D("session-run", "child-disposed"))),
        ({"kind": "blocked"}, ("refusal", None)),
        ({"kind": "error", "error": {"message": "x", "code": "UNKNOWN"}}, ("error", D("session-run", "child-error"))),
        ({"kind": "interrupted"}, ("error", None)),
        (None, ("error", D("session-run", "missing-terminal"))),
        ({"kind": "something-new"}, ("error", D("session-run", "child-unknown"))),
        ({"kind": "aborted", "reason": {"kind": "parent"}}, ("aborted", None)),
        ({"kind": "aborted", "reason": {"kind": "hook", "reason": "stop"}}, ("aborted", None)),
        ({"kind": "aborted", "reason": {"kind": "legacy"}}, ("aborted", None)),
    ],
)
def test_turn_end_reasons_map_row_by_row(reason: dict[str, Any] | None, expected: tuple[str, str | None]) -> None:
    assert map_turn_end(reason) == expected


def test_an_unknown_reason_value_is_never_copied() -> None:
    stop_reason, diagnostic = map_turn_end({"kind": "private/path/SECRET_TOKEN"})
    assert stop_reason == "error"
    assert diagnostic == D("session-run", "child-unknown")


def test_the_runs_last_turn_end_decides_and_none_is_a_missing_terminal() -> None:
    # The client keeps the last turn/end of the run (test_client.py); this maps it.
    completed: dict[str, Any] = {"type": "turn/end", "data": {"turn": 1, "reason": {"kind": "completed"}}}
    assert result_of_turn_end(completed) == ("completed", None)
    assert result_of_turn_end(None) == ("error", D("session-run", "missing-terminal"))


@pytest.mark.parametrize(
    ("error", "category"),
    [
        (TransportClosedError("gone"), "transport"),
        (SdkProtocolError("bad"), "protocol"),
        (JsonRpcResponseError(7, "refused", None), "protocol"),
        (RequestTimeoutError("slow"), "timeout"),
        (RuntimeError("transport"), "unknown"),
        (TypeError("protocol"), "unknown"),
    ],
)
def test_errors_are_classified_by_class_only(error: BaseException, category: str) -> None:
    assert classify_error(error) == category


def _message(content: object) -> dict[str, Any]:
    return {
        "type": "assistant/message",
        "seq": 3,
        "time": 0,
        "data": {"turn": 0, "step": 0, "message": {"content": content}},
    }


def _turn_end(reason: object) -> dict[str, Any]:
    return {"type": "turn/end", "seq": 4, "time": 0, "data": {"turn": 0, "reason": reason}}


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (42, "session.event carried no event envelope: 42"),
        ({"type": 7}, 'session.event carried no event envelope: {"type":7}'),
        (None, "session.event carried no event envelope: null"),
        (
            _message("not-an-array"),
            'assistant/message event carried malformed content: {"type":"assistant/message","seq":3,"time":0,'
            '"data":{"turn":0,"step":0,"message":{"content":"not-an-array"}}}',
        ),
        (
            _message([{"text": "no type"}]),
            'assistant/message event carried malformed content: {"type":"assistant/message","seq":3,"time":0,'
            '"data":{"turn":0,"step":0,"message":{"content":[{"text":"no type"}]}}}',
        ),
        (
            {"type": "assistant/message", "seq": 1, "time": 0},
            'assistant/message event carried malformed content: {"type":"assistant/message","seq":1,"time":0}',
        ),
        (
            {"type": "assistant/chunk", "seq": 1, "time": 0, "data": {"turn": 0, "step": 0}},
            'assistant/chunk event carried a malformed chunk: {"type":"assistant/chunk","seq":1,"time":0,'
            '"data":{"turn":0,"step":0}}',
        ),
        (
            {"type": "assistant/chunk", "data": {"chunk": {"type": "text-delta", "index": 0}}},
            'assistant/chunk event carried a malformed chunk: {"type":"assistant/chunk",'
            '"data":{"chunk":{"type":"text-delta","index":0}}}',
        ),
        ({"type": "turn/end", "seq": 5}, 'turn/end event carried malformed data: {"type":"turn/end","seq":5}'),
        (
            {"type": "turn/end", "seq": 5, "data": None},
            'turn/end event carried malformed data: {"type":"turn/end","seq":5,"data":null}',
        ),
        (_turn_end("not-a-reason-envelope"), 'turn/end carried no reason envelope: "not-a-reason-envelope"'),
        ({"type": "turn/end", "data": {"turn": 0}}, "turn/end carried no reason envelope: null"),
        (_turn_end({"kind": "aborted"}), 'turn/end carried a malformed aborted reason: {"kind":"aborted"}'),
        (
            _turn_end({"kind": "aborted", "reason": {"kind": "hook"}}),
            'turn/end carried a malformed hook abort reason: {"kind":"aborted","reason":{"kind":"hook"}}',
        ),
        (
            _turn_end({"kind": "aborted", "reason": {"kind": "future"}}),
            'turn/end carried an unknown abort reason: {"kind":"aborted","reason":{"kind":"future"}}',
        ),
    ],
)
def test_invalid_root_events_raise_the_exact_protocol_messages(event: object, message: str) -> None:
    with pytest.raises(SdkProtocolError) as caught:
        validate_event(event)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    "event",
    [
        _turn_end({"kind": "aborted", "reason": {"kind": "hook", "reason": "scripted hook abort"}}),
        _turn_end({"kind": "something-new"}),
        _turn_end({"kind": "error", "error": "anything at all"}),
        {"type": "future/event", "data": {"x": 1}},
        {"type": "future/event"},
        _message([]),
        {"type": "assistant/chunk", "data": {"chunk": {"type": "reasoning-delta"}}},
    ],
)
def test_valid_and_unknown_events_pass_validation(event: dict[str, Any]) -> None:
    assert validate_event(event) is event


def test_response_validation_messages_embed_compact_json() -> None:
    with pytest.raises(SdkProtocolError, match=r"^initialize returned no server identity: \{\}$"):
        server_info_of({})
    with pytest.raises(SdkProtocolError, match=r"^initialize returned no server identity: null$"):
        server_info_of(None)
    with pytest.raises(SdkProtocolError) as caught:
        message_id_of({"messageId": 5, "note": "é"})
    assert str(caught.value) == 'session/prompt returned no message id: {"messageId":5,"note":"é"}'
    assert server_info_of({"serverInfo": {"name": "n", "version": "v"}}).version == "v"
    assert message_id_of({"messageId": "m-1"}) == "m-1"


def test_the_receipt_is_the_spliced_event_inserting_the_message_id() -> None:
    receipt = {"type": "agent/inbox/spliced", "data": {"inserted": [{"id": "other"}, {"id": "m-1"}]}}
    assert is_receipt(receipt, "m-1")
    assert not is_receipt(receipt, "m-2")
    assert not is_receipt({"type": "agent/inbox/spliced", "data": {"inserted": "m-1"}}, "m-1")
    assert not is_receipt({"type": "turn/start", "data": {"inserted": [{"id": "m-1"}]}}, "m-1")


def _chunk(text: str) -> dict[str, Any]:
    return {
        "type": "assistant/chunk",
        "data": {"turn": 0, "step": 0, "chunk": {"type": "text-delta", "index": 0, "text": text}},
    }


def _fold_in(fold: OutputFold, event: dict[str, Any]) -> None:
    """What the run does with an event it streams nothing else of: a delta's text, or a message."""
    text = delta_text(event)
    if text is not None:
        fold.append_text(text)
    fold.observe_message(event)


def test_delta_text_is_a_text_deltas_non_empty_text_only() -> None:
    assert delta_text(_chunk("a")) == "a"
    assert delta_text(_chunk("")) is None
    assert delta_text(_message([{"type": "text", "text": "a"}])) is None
    reasoning = {"type": "assistant/chunk", "data": {"chunk": {"type": "reasoning-delta", "text": "r"}}}
    assert delta_text(reasoning) is None


def test_the_fold_prefers_the_last_non_empty_message_over_the_deltas() -> None:
    fold = OutputFold()
    for event in (_chunk("a"), _chunk(""), _chunk("b"), _message([{"type": "text", "text": "first"}])):
        _fold_in(fold, event)
    _fold_in(fold, _message([]))  # usage-only: ignored
    _fold_in(fold, _message([{"type": "text", "text": "second"}, {"type": "image", "data": "x"}]))
    assert fold.output() == [{"type": "text", "text": "second"}, {"type": "image", "data": "x"}]


def test_the_fold_falls_back_to_the_deltas_and_freezes() -> None:
    fold = OutputFold()
    _fold_in(fold, _chunk("hello "))
    _fold_in(fold, _message([]))
    _fold_in(fold, _chunk("world"))
    fold.freeze()
    _fold_in(fold, _chunk(" late"))
    assert fold.output() == [{"type": "text", "text": "hello world"}]
    assert OutputFold().output() == []


def test_agent_options_override_the_route_per_run() -> None:
    spec = SdkRunSpec(command="rt", cwd="/", provider="p", model="m", max_tokens=4096)
    assert resolve_route(spec, None) is spec
    routed = resolve_route(spec, AgentOptions(reasoning_effort="high"))
    assert (routed.provider, routed.model, routed.reasoning_effort, routed.max_tokens) == ("p", "m", "high", 4096)
    routed = resolve_route(spec, AgentOptions(provider="a", model="b", reasoning_effort="max", max_tokens=7))
    assert (routed.provider, routed.model, routed.reasoning_effort, routed.max_tokens) == ("a", "b", "max", 7)
    assert (spec.provider, spec.reasoning_effort) == ("p", None)


def message_event(block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "assistant/message", "seq": 0, "time": 0, "data": {"message": {"content": [block]}}}


def nested_block(levels: int) -> dict[str, Any]:
    """A content block whose nesting (the block itself included) is exactly ``levels`` deep."""
    value: object = "bottom"
    for _ in range(levels - 1):
        value = [value]
    return {"type": "deep", "value": value}


def test_content_nested_up_to_the_bound_passes_and_one_level_more_is_malformed() -> None:
    within = message_event(nested_block(MAX_CONTENT_DEPTH))
    assert validate_event(within) is within
    with pytest.raises(SdkProtocolError) as caught:
        validate_event(message_event(nested_block(MAX_CONTENT_DEPTH + 1)))
    assert str(caught.value).startswith("assistant/message event carried malformed content: {")


def test_a_value_too_deep_to_encode_never_breaks_the_host_only_message() -> None:
    too_deep = message_event(nested_block(100_000))
    with pytest.raises(SdkProtocolError) as caught:
        validate_event(too_deep)
    assert str(caught.value) == "assistant/message event carried malformed content: <unencodable value>"
