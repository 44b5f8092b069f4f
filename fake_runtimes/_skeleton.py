"""The skeleton both fake runtimes share: the stdin reader thread, atomic marker files, the grandchild, prompt text.

Stdlib only, so a fake runs under any ``sys.executable``. The reader splits stdin into lines in linear time (a long
line is gathered as a list of chunks and joined once), decodes each line as one JSON object (anything else is
skipped), and ends with the ``EOF`` sentinel.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Final, cast

JsonObject = dict[str, object]

_READ_SIZE: Final = 1 << 20
_GRANDCHILD_SOURCE: Final = "import time\nwhile True:\n    time.sleep(3600)\n"


class EndOfInput:
    """The type of the ``EOF`` sentinel."""


EOF: Final = EndOfInput()
"""Queue sentinel: stdin reached EOF."""

Inbox = queue.Queue[JsonObject | EndOfInput]

# Keeps each grandchild's Popen referenced so it is never collected (and never warned about) while we live.
_grandchildren: list[subprocess.Popen[bytes]] = []


def compact_json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def write_file_atomically(path: str, text: str) -> None:
    """Write ``text`` to ``path`` via a sibling temp file and a rename, so a poller never sees half a file."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def stdin_lines() -> Iterator[bytes]:
    """Yield every line of fd 0 without its newline, then a last unterminated line if any; raw reads, no lock."""
    parts: list[bytes] = []
    while True:
        try:
            data = os.read(0, _READ_SIZE)
        except OSError:
            data = b""
        if not data:
            break
        start = 0
        while (newline := data.find(b"\n", start)) >= 0:
            parts.append(data[start:newline])
            yield b"".join(parts)
            parts.clear()
            start = newline + 1
        if start < len(data):
            parts.append(data[start:])
    if parts:
        yield b"".join(parts)


def _decode(line: bytes) -> JsonObject | None:
    try:
        value = json.loads(line)
    except ValueError:  # UnicodeDecodeError and JSONDecodeError are both ValueErrors
        return None
    return cast(JsonObject, value) if isinstance(value, dict) else None


def _read_stdin(inbox: Inbox, eof_seen: threading.Event) -> None:
    for line in stdin_lines():
        message = _decode(line)
        if message is not None:
            inbox.put(message)
    eof_seen.set()
    inbox.put(EOF)


def start_stdin_reader(inbox: Inbox, eof_seen: threading.Event) -> None:
    """Start the daemon reader thread: one ``inbox`` item per JSON object line, then ``eof_seen`` and ``EOF``."""
    threading.Thread(target=_read_stdin, args=(inbox, eof_seen), name="stdin-reader", daemon=True).start()


def spawn_grandchild(pid_file: str, *, setsid: bool) -> None:
    """Spawn a sleep-forever grandchild on /dev/null (in a new session when ``setsid``); publish its pid atomically.

    Call it before changing any signal disposition: SIG_IGN would survive exec into the grandchild.
    """
    child = subprocess.Popen(
        [sys.executable, "-c", _GRANDCHILD_SOURCE],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=setsid,
    )
    _grandchildren.append(child)
    write_file_atomically(pid_file, f"{child.pid}\n")


def prompt_text(blocks: object) -> str:
    """Concatenate the text of a prompt's ``{"type": "text"}`` blocks (the echo answer)."""
    if not isinstance(blocks, list):
        return ""
    pieces: list[str] = []
    for block in cast(list[object], blocks):
        if isinstance(block, dict):
            typed = cast(JsonObject, block)
            text = typed.get("text")
            if typed.get("type") == "text" and isinstance(text, str):
                pieces.append(text)
    return "".join(pieces)
