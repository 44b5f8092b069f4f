"""The live detail of ``subagent-host run`` in text mode: thinking and tool-call lines on stderr as they stream.

Same shapes as ``runs show``: a reasoning block opens with ``[thinking]`` and its text follows as it streams; each
tool-call start or update is one ``[tool] <title> (<kind>, <status>)`` line. Child text is neutralised.
"""

from __future__ import annotations

from collections.abc import Callable

from host import ReasoningDelta, StreamChunk, ToolCallChunk
from host.cli._render import THINKING_HEADER, neutralise, tool_line

__all__ = ["LiveDetail"]


class LiveDetail:
    """Writes the detail lines of one run's chunks through ``write`` (``Output.detail``: stderr, in order)."""

    def __init__(self, write: Callable[[str], None]) -> None:
        self._write = write
        self._reasoning_index: int | None = None
        self._line_open = False

    def on_chunk(self, chunk: StreamChunk) -> None:
        """Show one chunk's detail; text deltas are the answer (stdout) and only end an open thinking line."""
        if isinstance(chunk, ReasoningDelta):
            if self._reasoning_index != chunk.index:
                self._end_line()
                self._write(THINKING_HEADER + "\n")
                self._reasoning_index = chunk.index
            text = neutralise(chunk.text)
            self._write(text)
            self._line_open = bool(text) and not text.endswith("\n")
            return
        self._end_line()
        self._reasoning_index = None
        if isinstance(chunk, ToolCallChunk):
            self._write(tool_line(chunk.title, chunk.kind, chunk.status) + "\n")

    def close(self) -> None:
        """End a thinking line still open."""
        self._end_line()

    def _end_line(self) -> None:
        if self._line_open:
            self._write("\n")
            self._line_open = False
