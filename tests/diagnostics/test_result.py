"""The SubagentResult shape and the exact 4096-byte diagnostic bound (docs/behaviour.md#results-subagentresult,
#results-diagnostic-bound)."""

from __future__ import annotations

import pydantic
import pytest

from host.diagnostics import SubagentResult, limit_diagnostic
from host.diagnostics._result import DIAGNOSTIC_LIMIT_BYTES

SUFFIX = "\n[diagnostic truncated]"


def test_result_without_diagnostic_serializes_without_a_diagnostic_key() -> None:
    result = SubagentResult(stop_reason="error")

    assert result.to_json() == {"output": [], "stop_reason": "error"}


def test_empty_diagnostic_counts_as_no_diagnostic() -> None:
    result = SubagentResult(stop_reason="error", diagnostic="")

    assert result.diagnostic is None
    assert "diagnostic" not in result.to_json()


def test_result_with_diagnostic_serializes_it_and_keeps_none_inside_output_blocks() -> None:
    block = {"type": "tool-call", "status": None}
    result = SubagentResult(output=[block], stop_reason="error", diagnostic="d")

    assert result.to_json() == {"output": [block], "stop_reason": "error", "diagnostic": "d"}


def test_result_is_frozen() -> None:
    result = SubagentResult(stop_reason="completed")

    field = "stop_reason"
    with pytest.raises(pydantic.ValidationError):
        setattr(result, field, "error")


def test_limit_keeps_exactly_4096_bytes_unchanged() -> None:
    text = "x" * 4096

    assert limit_diagnostic(text) == text


def test_limit_cuts_4097_bytes_to_4073_plus_the_suffix() -> None:
    limited = limit_diagnostic("x" * 4097)

    assert limited == "x" * 4073 + SUFFIX
    assert len(limited.encode("utf-8")) == DIAGNOSTIC_LIMIT_BYTES


def test_limit_backs_off_a_straddling_three_byte_character() -> None:
    source = "权限" * 4096
    assert len(source.encode("utf-8")) == 24576

    limited = limit_diagnostic(source)

    prefix = limited.removesuffix(SUFFIX)
    assert limited.endswith("[diagnostic truncated]")
    assert len(prefix) == 1357
    assert len(prefix.encode("utf-8")) == 4071
    assert len(limited.encode("utf-8")) == 4094
    assert prefix == source[:1357]
    assert "\ufffd" not in limited


def test_limit_replaces_lone_surrogates_and_stays_within_the_bound() -> None:
    limited = limit_diagnostic("\ud800" * 5000)

    encoded = limited.encode("utf-8")
    assert len(encoded) <= DIAGNOSTIC_LIMIT_BYTES
    assert limited.endswith(SUFFIX)
    assert set(limited.removesuffix(SUFFIX)) == {"\ufffd"}


def test_limit_replaces_a_lone_surrogate_in_short_text() -> None:
    assert limit_diagnostic("a\udc00b") == "a\ufffdb"


def test_limit_never_leaves_a_split_sequence_for_any_width() -> None:
    for char in ("é", "权", "😀"):
        for pad in range(4):
            limited = limit_diagnostic("x" * pad + char * 3000)
            assert len(limited.encode("utf-8")) <= DIAGNOSTIC_LIMIT_BYTES
            assert "\ufffd" not in limited
