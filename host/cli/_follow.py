"""``subagent-host runs show --follow RUN_ID``: render a run as its transcript is written, until its ``run/end``.

The lines are those of ``runs show``: the header (``run``, ``provider:``, ``cwd:``, ``started:``), the prompt, then
under ``message:`` the text as it streams, reasoning under ``[thinking]``, one ``[tool] <title> (<kind>, <status>)``
line per tool-call start or update, ``[Stopped]`` after an interrupted message; the ``duration:``, ``stop reason:``
and ``diagnostic:`` lines come last, from ``run/end``. Child text is neutralised. Records of other types are not
shown. The transcript is read every ``POLL_INTERVAL_S`` through ``TranscriptTail`` (whole records only, bounded
memory); while nothing new arrives, the writer's lock is probed every ``_LOCK_CHECK_EVERY`` polls. When the
writer's lock is released without a ``run/end``, the run is incomplete: that is said and the follow ends. SIGINT,
SIGTERM and SIGHUP end the follow at once (the run itself goes on), with the signal's status.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from types import FrameType
from typing import Any, Final, cast

from host.cli._render import STOPPED_MARKER, THINKING_HEADER, duration_text, neutralise, tool_line
from host.cli._support import EXIT_BROKEN_STDOUT, EXIT_BY_SIGNAL, HANDLED_SIGNALS, RecordedSignals
from host.records import TranscriptTail, prompt_text

__all__ = ["POLL_INTERVAL_S", "follow_run"]

POLL_INTERVAL_S: Final = 0.05
"""How long the follower sleeps when the transcript has nothing new."""
_LOCK_CHECK_EVERY: Final = 4
"""Idle polls per probe of the writer's lock (a probe opens the file): an incomplete run is seen within 200 ms."""

_EXIT_OK: Final = 0
_STDOUT: Final = 1
_STDERR: Final = 2


class _SignalReceived(Exception):
    """Raised by the follow's signal handler, so a sleep or a blocked write ends at once."""


class _StdoutGone(Exception):
    """Writing to stdout failed: it was closed, or its reader went away."""


def follow_run(path: Path, run_id: str, received: RecordedSignals) -> int:
    """Render the run of ``path`` until its ``run/end`` (or until its writer stops); return the exit status."""

    def stop(signum: int, frame: FrameType | None) -> None:
        received.record(signum, frame)
        raise _SignalReceived

    tail = TranscriptTail(path)
    renderer = _Renderer()
    try:
        for signum in HANDLED_SIGNALS:
            signal.signal(signum, stop)
        if received.first is not None:  # received before the handlers above were in place
            raise _SignalReceived
        return _follow(tail, renderer, run_id)
    except _SignalReceived:
        # Nothing more is written: stdout may be what blocked, and the shell shows the interruption.
        first = received.first
        return EXIT_BY_SIGNAL[first] if first is not None else EXIT_BY_SIGNAL[signal.SIGINT]
    except _StdoutGone:
        return EXIT_BROKEN_STDOUT
    finally:
        _restore(received)
        tail.close()


def _restore(received: RecordedSignals) -> None:
    """Put the console entry's recorder back; a signal landing meanwhile is recorded all the same."""
    while True:
        try:
            received.reinstall()
            return
        except _SignalReceived:
            continue


def _follow(tail: TranscriptTail, renderer: _Renderer, run_id: str) -> int:
    idle_polls = 0
    while True:
        records = tail.read_records()
        if _show(records, renderer):
            return _EXIT_OK
        if records or not tail.drained:
            continue  # more may be waiting (records, or the rest of a long line): read again before sleeping
        idle_polls += 1
        if idle_polls % _LOCK_CHECK_EVERY == 1 and not tail.writer_alive():
            # The lock was free: whatever the writer wrote is in the file now; read all of it.
            while True:
                if _show(tail.read_records(), renderer):
                    return _EXIT_OK
                if tail.drained:
                    break
            _write(_STDOUT, renderer.end_line() + "\nstop reason: incomplete\n")
            _write_quietly(
                _STDERR, f"subagent-host: run {run_id} is incomplete: its writer stopped without recording run/end\n"
            )
            return _EXIT_OK
        time.sleep(POLL_INTERVAL_S)


def _show(records: list[dict[str, Any]], renderer: _Renderer) -> bool:
    """Write the records' lines; whether ``run/end`` was among them (nothing after it is shown)."""
    parts: list[str] = []
    ended = False
    for record in records:
        parts.append(renderer.render(record))
        if record.get("type") == "run/end":
            ended = True
            break
    _write(_STDOUT, "".join(parts))
    return ended


def _write(fd: int, text: str) -> None:
    """Write all of ``text``.

    Raises:
        _StdoutGone: the write failed (EPIPE, EBADF, ...).
    """
    view = memoryview(text.encode("utf-8", errors="backslashreplace"))
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        raise _StdoutGone from exc


def _write_quietly(fd: int, text: str) -> None:
    try:
        _write(fd, text)
    except _StdoutGone:
        pass  # the exit status still says what happened


class _Renderer:
    """Turns records into ``runs show`` lines, keeping track of an open line and of the blocks seen."""

    def __init__(self) -> None:
        self._line_open = False
        self._message_shown = False
        self._streamed: set[int] = set()
        self._reasoning_index: int | None = None
        self._text_index: int | None = None

    def render(self, record: dict[str, Any]) -> str:
        """The text that shows ``record`` (empty for a record ``runs show`` does not show)."""
        record_type = record.get("type")
        raw = record.get("data")
        data = cast("dict[str, Any]", raw) if isinstance(raw, dict) else {}
        if record_type == "run/start":
            return "".join(
                f"{label}{neutralise(str(value))}\n"
                for label, value in (
                    ("run ", data.get("run_id", "-")),
                    ("provider: ", f"{data.get('provider', '-')} ({data.get('kind', '-')})"),
                    ("cwd: ", data.get("cwd") or "-"),
                    ("started: ", record.get("time") or "-"),
                )
            )
        if record_type == "prompt":
            return f"\nprompt:\n{neutralise(prompt_text(data.get('content')))}\n"
        if record_type == "chunk":
            return self._chunk(data)
        if record_type == "assistant/message" and data.get("interrupted") is True:
            return self.end_line() + STOPPED_MARKER + "\n"
        if record_type == "run/end":
            return self._end(data)
        return ""

    def end_line(self) -> str:
        """A newline when a line is open (so what follows starts a line of its own)."""
        if not self._line_open:
            return ""
        self._line_open = False
        return "\n"

    def _chunk(self, chunk: dict[str, Any]) -> str:
        chunk_type, index = chunk.get("type"), chunk.get("index")
        text = chunk.get("text")
        if chunk_type == "text-delta" and isinstance(text, str) and isinstance(index, int):
            lead = self._lead()
            if self._text_index != index:
                lead += self.end_line()
            self._reasoning_index, self._text_index = None, index
            return lead + self._stream(index, text)
        if chunk_type == "reasoning-delta" and isinstance(text, str) and isinstance(index, int):
            lead = self._lead()
            if self._reasoning_index != index:
                lead += self.end_line() + THINKING_HEADER + "\n"
            self._reasoning_index, self._text_index = index, None
            return lead + self._stream(index, text)
        if chunk_type == "tool-call":
            lead = self._lead() + self.end_line()
            self._reasoning_index = self._text_index = None
            return lead + tool_line(chunk.get("title"), chunk.get("kind"), chunk.get("status")) + "\n"
        if chunk_type == "block-end":
            return self._block_end(index, chunk.get("block"))
        return ""

    def _block_end(self, index: object, raw: object) -> str:
        """A block that did not stream (a whole text, reasoning or other block) is shown as ``runs show`` shows it."""
        if not isinstance(raw, dict) or index in self._streamed:
            return ""
        block = cast("dict[str, Any]", raw)
        block_type, text = block.get("type"), block.get("text")
        if block_type == "tool-call":
            return ""  # shown by its tool-call chunks
        lead = self._lead() + self.end_line()
        self._reasoning_index = self._text_index = None
        if block_type == "text" and isinstance(text, str):
            shown = neutralise(text)
        elif block_type == "reasoning" and isinstance(text, str):
            shown = f"{THINKING_HEADER}\n{neutralise(text)}"
        else:
            shown = f"[{neutralise(str(block_type))} block]"
        return lead + shown + ("" if shown.endswith("\n") else "\n")

    def _lead(self) -> str:
        if self._message_shown:
            return ""
        self._message_shown = True
        return "\nmessage:\n"

    def _stream(self, index: int, text: str) -> str:
        self._streamed.add(index)
        shown = neutralise(text)
        if shown:
            self._line_open = not shown.endswith("\n")
        return shown

    def _end(self, data: dict[str, Any]) -> str:
        lines = [f"duration: {duration_text(data.get('duration_ms'))}"]
        stop_reason = data.get("stop_reason")
        lines.append(f"stop reason: {neutralise(stop_reason) if isinstance(stop_reason, str) else 'unknown'}")
        diagnostic = data.get("diagnostic")
        if isinstance(diagnostic, str):
            lines.append(f"diagnostic: {neutralise(diagnostic)}")
        return self.end_line() + "\n" + "\n".join(lines) + "\n"
