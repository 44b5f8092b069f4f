"""Newline framing for the JSON-RPC peer: compact encoding out, lenient decoding in.

``encode_message`` yields one compact ``\\n``-terminated UTF-8 line per message and never emits non-standard JSON (a
lone surrogate in a string goes out as its ``\\uXXXX`` escape).
``parse_line`` never raises for peer input: a line that is blank, not UTF-8, not JSON, uses ``NaN``/``Infinity``,
or is not an object comes back as ``None`` (logged at debug level, by size only).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Final, TypeAlias, cast

__all__ = ["MAX_LINE_BYTES", "NON_JSON_LINE_LOG", "NonJsonLines", "RequestId", "encode_message", "parse_line"]

logger = logging.getLogger(__name__)

MAX_LINE_BYTES: Final = 32 * 1024 * 1024
"""Longest line (without its ``\\n``) the reader accepts; a longer one closes the connection."""

RequestId: TypeAlias = int | str
"""A JSON-RPC request id. A ``bool`` is never one ("True would alias request id 1")."""


def _reject_constant(name: str) -> object:
    # json accepts NaN/Infinity/-Infinity by default; they are not JSON, so the whole line is refused.
    raise ValueError(f"non-standard JSON constant {name}")


# One decoder and one encoder for the process: passing keyword arguments to json.loads/json.dumps would build a
# new codec per message, which the hot path cannot afford.
_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant)
_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
_ASCII_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def encode_message(message: dict[str, Any]) -> bytes:
    """Encode one message as a compact UTF-8 JSON line ending in ``\\n``.

    Raises:
        TypeError: a value is not JSON-serialisable.
        ValueError: a float is ``NaN``/``Infinity``, or the structure is circular.
        RecursionError: the structure is nested too deeply.
    """
    try:
        return (_ENCODER.encode(message) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (half a pair a JavaScript peer split, or an id echoed back): ASCII escapes keep the line
        # valid and lossless (host._text.encode_json, inlined: this is the writer's hot path).
        return (_ASCII_ENCODER.encode(message) + "\n").encode("ascii")


def parse_line(line: bytes | bytearray) -> dict[str, Any] | None:
    """Decode one line (without its ``\\n``) into a JSON object, or ``None`` when it must be skipped."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        logger.debug("skipping a %d-byte line that is not valid UTF-8", len(line))
        return None
    text = text.strip()
    if not text:
        return None
    try:
        # raw_decode on the stripped text skips decode()'s two whitespace regex passes, a real cost per message.
        value, end = _DECODER.raw_decode(text)
    except (ValueError, RecursionError):
        # JSONDecodeError and the NaN/Infinity refusal are ValueErrors; absurd nesting is a RecursionError.
        logger.debug("skipping a %d-byte line that is not standard JSON: %r", len(line), line[:200])
        return None
    if end != len(text):
        logger.debug("skipping a %d-byte line with data after its JSON value", len(line))
        return None
    if type(value) is not dict:
        logger.debug("skipping a line that is not a JSON object (%s)", type(value).__name__)
        return None
    return cast("dict[str, Any]", value)


NON_JSON_LINE_LOG: Final = "the child wrote a %d-byte line of non-JSON text to stdout: %r"
"""The info-level log line of the first non-JSON line a peer skipped (its first ``NON_JSON_LOG_BYTES``, repr)."""
NON_JSON_LOG_BYTES: Final = 200


class NonJsonLines:
    """Counts the non-blank lines a peer skipped as no JSON object; logs the first at info (off the hot path)."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def note(self, line: bytes | bytearray) -> None:
        """Count ``line`` unless it is blank; the first one is logged at once, truncated."""
        if not line.strip():
            return
        self.count += 1
        if self.count == 1:
            logger.info(NON_JSON_LINE_LOG, len(line), bytes(line[:NON_JSON_LOG_BYTES]))
